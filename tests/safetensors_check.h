/* safetensors_check.h: reading back the checkpoints the trainer writes, for tests. */
#ifndef PGN_TEST_SAFETENSORS_CHECK_H
#define PGN_TEST_SAFETENSORS_CHECK_H

#include <criterion/criterion.h>
#include <jansson.h>
#include <stdint.h>
#include <string.h>

/* The JSON header of a safetensors file (8-byte little-endian length, then JSON), checked to
 * describe exactly the bytes that follow it (F32 tensors whose offsets match their shapes);
 * *data_start receives where tensor data begins. */
static inline json_t *test_safetensors_header(const char *bytes, size_t len, size_t *data_start) {
    cr_assert_gt(len, 8, "shorter than the 8-byte header length");
    uint64_t hlen = 0;
    for (int k = 0; k < 8; k++) hlen |= (uint64_t)(unsigned char)bytes[k] << (8 * k);
    cr_assert_leq(hlen, len - 8, "header length %llu past the end", (unsigned long long)hlen);
    json_error_t e;
    json_t *header = json_loadb(bytes + 8, hlen, 0, &e);
    cr_assert(json_is_object(header), "the header is a JSON object: %s", e.text);
    size_t end = 0;
    const char *name;
    json_t *t;
    json_object_foreach(header, name, t) {
        if (strcmp(name, "__metadata__") == 0) continue;
        cr_assert_str_eq(json_string_value(json_object_get(t, "dtype")), "F32", "%s", name);
        json_t *shape = json_object_get(t, "shape"), *off = json_object_get(t, "data_offsets");
        size_t count = 1;
        for (size_t i = 0; i < json_array_size(shape); i++)
            count *= (size_t)json_integer_value(json_array_get(shape, i));
        size_t b = (size_t)json_integer_value(json_array_get(off, 0));
        size_t f = (size_t)json_integer_value(json_array_get(off, 1));
        cr_assert_eq(f - b, count * 4, "%s: offsets match its shape", name);
        if (f > end) end = f;
    }
    cr_assert_eq(8 + hlen + end, len, "the tensors fill the file exactly");
    if (data_start) *data_start = 8 + hlen;
    return header;
}

#endif
