/* test_datasets.c: datasets through the API of a live paragond: uploads of each format (idx,
 * gzip'd idx, text) stored byte for byte with their SHA-256; bad names, bad content, the size
 * limit, a checksum that does not match and If-None-Match: * refused with nothing left behind;
 * the listing (files copied in by hand included); delete, refused while a job names the dataset;
 * and a train job on uploaded idx files, and the error for a spec naming one that is not there. */
#include "paragond_harness.h"
#include "paragon.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

TestSuite(datasets, .init = harness_setup, .fini = harness_teardown);

/* ---- files made here ------------------------------------------------------------------------ */

typedef struct blob {
    unsigned char *data;
    size_t len;
} blob;

static void put_be32(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

/* n images of 2x2 pixels: class 1 is bright in the top row, class 0 in the bottom row. */
#define SIDE 2
static blob idx_images(uint32_t n, size_t extra) {
    blob b = {.len = 16 + (size_t)n * SIDE * SIDE + extra};
    b.data = calloc(1, b.len);
    put_be32(b.data, 0x803);
    put_be32(b.data + 4, n);
    put_be32(b.data + 8, SIDE);
    put_be32(b.data + 12, SIDE);
    for (uint32_t i = 0; i < n; i++) {
        unsigned char *px = b.data + 16 + (size_t)i * SIDE * SIDE;
        bool top = i % 2;
        px[0] = px[1] = top ? 250 : 5;
        px[2] = px[3] = top ? 5 : 250;
    }
    return b;
}

static blob idx_labels(uint32_t n) {
    blob b = {.len = 8 + n};
    b.data = calloc(1, b.len);
    put_be32(b.data, 0x801);
    put_be32(b.data + 4, n);
    for (uint32_t i = 0; i < n; i++) b.data[8 + i] = (unsigned char)(i % 2);
    return b;
}

/* src as a gzip stream. */
static blob gzipped(const blob *src) {
    z_stream z = {0};
    cr_assert_eq(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
    blob b = {.len = deflateBound(&z, src->len) + 32};
    b.data = malloc(b.len);
    z.next_in = src->data;
    z.avail_in = (uInt)src->len;
    z.next_out = b.data;
    z.avail_out = (uInt)b.len;
    cr_assert_eq(deflate(&z, Z_FINISH), Z_STREAM_END);
    b.len = z.total_out;
    deflateEnd(&z);
    return b;
}

static blob text_blob(const char *s) {
    blob b = {.len = strlen(s)};
    b.data = malloc(b.len + 1);
    memcpy(b.data, s, b.len + 1);
    return b;
}

static void sha256_of(const blob *b, char hex[65]) { pgn_sha256_hex_of(b->data, b->len, hex); }

/* ---- requests ------------------------------------------------------------------------------- */

/* PUT /api/v1/datasets/<name> with the body's bytes, as the owner (token) unless bare; extra
 * headers (NULL-ended) beside it. */
static http_response put_as(const server *s, const char *name, const blob *b, const char *const *extra,
                            bool bare) {
    char auth[300], path[400];
    auth_header(s, auth, sizeof auth);
    snprintf(path, sizeof path, "/api/v1/datasets/%s", name);
    const char *headers[8] = {0};
    size_t n = 0;
    if (!bare) headers[n++] = auth;
    headers[n++] = "Content-Type: application/octet-stream";
    for (const char *const *h = extra; h && *h && n < 7; h++) headers[n++] = *h;
    http_response r;
    cr_assert_eq(http_request(s->port, "PUT", path, headers, (const char *)b->data, b->len, HTTP_TIMEOUT_MS, &r),
                 0, "PUT %s: %s", path, http_last_error());
    return r;
}

static http_response put(const server *s, const char *name, const blob *b) { return put_as(s, name, b, NULL, false); }

/* Uploads b as name and asserts status (201 or 200) and the reply's metadata; returns it. */
static json_t *upload_ok(const server *s, const char *name, const blob *b, int status, const char *format) {
    http_response r = put(s, name, b);
    cr_assert_eq(r.status, status, "PUT %s: %d %s", name, r.status, r.body);
    json_t *o = parse_body(&r);
    char hex[65], loc[200], want[200];
    sha256_of(b, hex);
    cr_assert_str_eq(str(o, "name"), name);
    cr_assert_eq(json_integer_value(json_object_get(o, "bytes")), (json_int_t)b->len);
    cr_assert_str_eq(str(o, "sha256"), hex);
    cr_assert_str_eq(str(o, "format"), format);
    cr_assert(json_is_true(json_object_get(o, "uploaded")) && json_is_true(json_object_get(o, "valid")));
    cr_assert_not_null(str(o, "created_at"), "an upload has its time");
    snprintf(want, sizeof want, "/api/v1/datasets/%s", name);
    cr_assert_str_eq(http_header(&r, "Location", loc, sizeof loc), want);
    http_response_free(&r);
    return o;
}

/* The file <data>/datasets/<name>, read whole (NULL when missing). */
static char *stored(const server *s, const char *name, size_t *len) {
    char path[600];
    snprintf(path, sizeof path, "%s/datasets/%s", s->data, name);
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    *len = fread(buf, 1, (size_t)n, f);
    fclose(f);
    return buf;
}

static void assert_stored(const server *s, const char *name, const blob *b) {
    size_t len = 0;
    char *got = stored(s, name, &len);
    cr_assert_not_null(got, "%s is stored", name);
    cr_assert_eq(len, b->len, "%s: %zu bytes stored, %zu sent", name, len, b->len);
    cr_assert_eq(memcmp(got, b->data, len), 0, "%s is stored byte for byte", name);
    free(got);
}

/* The datasets directory's entries, hidden ones (uploads in progress) included, sorted and
 * joined with ' '. */
static void dir_entries(const server *s, char *out, size_t size) {
    char path[400];
    snprintf(path, sizeof path, "%s/datasets", s->data);
    struct dirent **list;
    int n = scandir(path, &list, NULL, alphasort);
    cr_assert_geq(n, 0, "%s", path);
    out[0] = 0;
    for (int i = 0; i < n; i++) {
        if (strcmp(list[i]->d_name, ".") && strcmp(list[i]->d_name, ".."))
            snprintf(out + strlen(out), size - strlen(out), "%s%s", out[0] ? " " : "", list[i]->d_name);
        free(list[i]);
    }
    free(list);
}

static void assert_dir(const server *s, const char *want) {
    char got[2048];
    dir_entries(s, got, sizeof got);
    cr_assert_str_eq(got, want, "the datasets directory holds exactly: %s", want);
}

/* ---- tests ---------------------------------------------------------------------------------- */

Test(datasets, uploads_of_each_format_are_stored_with_their_digest_and_listed) {
    server s = start_server();
    blob images = idx_images(8, 0), labels = idx_labels(8), labels_plain = idx_labels(6);
    blob labels_gz = gzipped(&labels_plain);
    blob text = text_blob("h\xc3\xa9llo, w\xc3\xb6rld\n");

    json_t *o = upload_ok(&s, "train-images.idx", &images, 201, "idx");
    cr_assert_str_eq(str(o, "kind"), "images");
    json_t *dims = json_object_get(o, "dims");
    cr_assert_eq(json_array_size(dims), 3);
    cr_assert_eq(json_integer_value(json_array_get(dims, 0)), 8);
    cr_assert_eq(json_integer_value(json_array_get(dims, 1)), SIDE);
    cr_assert_eq(json_integer_value(json_array_get(dims, 2)), SIDE);
    json_decref(o);
    o = upload_ok(&s, "train-labels-idx1-ubyte", &labels, 201, "idx");
    cr_assert_str_eq(str(o, "kind"), "labels");
    cr_assert_eq(json_integer_value(json_array_get(json_object_get(o, "dims"), 0)), 8);
    json_decref(o);
    o = upload_ok(&s, "small-labels.idx.gz", &labels_gz, 201, "idx.gz");
    cr_assert_eq(json_integer_value(json_array_get(json_object_get(o, "dims"), 0)), 6,
                 "the dims are the inflated file's");
    json_decref(o);
    o = upload_ok(&s, "words.txt", &text, 201, "text");
    cr_assert_eq(json_integer_value(json_object_get(o, "chars")), 13, "characters, not bytes");
    json_decref(o);
    assert_stored(&s, "train-images.idx", &images);
    assert_stored(&s, "train-labels-idx1-ubyte", &labels);
    assert_stored(&s, "small-labels.idx.gz", &labels_gz);
    assert_stored(&s, "words.txt", &text);

    /* The same name again replaces it: 200, and the new bytes. */
    blob fewer = idx_images(4, 0);
    json_decref(upload_ok(&s, "train-images.idx", &fewer, 200, "idx"));
    assert_stored(&s, "train-images.idx", &fewer);

    /* A file copied in by hand is listed too, hashed and checked when first listed. */
    char path[600], hex[65];
    snprintf(path, sizeof path, "%s/datasets/by-hand.txt", s.data);
    FILE *f = fopen(path, "wb");
    fputs("copied in by hand\n", f);
    fclose(f);
    blob hand = text_blob("copied in by hand\n");
    sha256_of(&hand, hex);

    json_t *v = get_json(&s, "/api/v1/datasets", 200);
    json_t *list = json_object_get(v, "datasets");
    const char *names[] = {"by-hand.txt", "small-labels.idx.gz", "train-images.idx", "train-labels-idx1-ubyte",
                           "words.txt"};
    cr_assert_eq(json_array_size(list), 5, "%s", json_dumps(v, 0));
    for (size_t i = 0; i < 5; i++) cr_assert_str_eq(str(json_array_get(list, i), "name"), names[i], "name order");
    json_t *first = json_array_get(list, 0);
    cr_assert_str_eq(str(first, "sha256"), hex);
    cr_assert_str_eq(str(first, "format"), "text");
    cr_assert(json_is_null(json_object_get(first, "created_at")), "not uploaded: no upload time");
    cr_assert(json_is_false(json_object_get(first, "uploaded")));
    cr_assert_not_null(str(first, "modified_at"));
    char fewer_hex[65];
    sha256_of(&fewer, fewer_hex);
    cr_assert_str_eq(str(json_array_get(list, 2), "sha256"), fewer_hex, "the replacement's digest");
    cr_assert_eq(json_integer_value(json_object_get(v, "max_bytes")), 512LL << 20);
    json_decref(v);

    /* One dataset's metadata; a file that is not a dataset is listed with what is wrong. */
    v = get_json(&s, "/api/v1/datasets/small-labels.idx.gz", 200);
    cr_assert_str_eq(str(v, "format"), "idx.gz");
    cr_assert_str_eq(str(v, "kind"), "labels");
    json_decref(v);
    snprintf(path, sizeof path, "%s/datasets/notes", s.data);
    f = fopen(path, "wb");
    fputs("not a dataset", f);
    fclose(f);
    v = get_json(&s, "/api/v1/datasets/notes", 200);
    cr_assert_str_eq(str(v, "format"), "unknown");
    cr_assert(json_is_false(json_object_get(v, "valid")));
    cr_assert(strstr(str(v, "problem"), "extension"), "%s", str(v, "problem"));
    json_decref(v);
    http_response r = request(&s, "GET", "/api/v1/datasets/missing.idx", NULL, NULL);
    assert_error(&r, 404, "not_found", NULL);
    cr_assert(strstr(r.body, "missing.idx"), "%s", r.body);
    http_response_free(&r);

    free(images.data), free(labels.data), free(labels_plain.data), free(labels_gz.data);
    free(text.data), free(fewer.data), free(hand.data);
    stop_server(&s);
    cr_assert_eq(count_rows(&s, "SELECT count(*) FROM datasets WHERE created_at IS NOT NULL", 0), 4,
                 "the uploads' records are in the database");
}

Test(datasets, bad_names_are_refused_naming_the_rule) {
    server s = start_server();
    blob images = idx_images(2, 0);
    char long_name[200];
    memset(long_name, 'a', 130);
    strcpy(long_name + 130, ".idx");
    const struct {
        const char *name, *says;
    } cases[] = {
        {".hidden.idx", "must not start with '.'"},
        {"a..b.idx", "'..'"},
        {"a%2Fb.idx", "must not contain '/'"},
        {"sub/b.idx", "must not contain '/'"},
        {"two%20words.idx", "holds ' '"},
        {"semi%3Bcolon.txt", "holds ';'"},
        {"ctl%01.txt", "0x01"},
        /* %00 ended the C string: the upload was stored as "cut.idx" */
        {"cut.idx%00.txt", "holds '%'"},
        {"cut%00.idx", "holds '%'"},
        {"table.csv", "no dataset extension"},
        {"archive.txt.gz", "no dataset extension"},
        {long_name, "at most 128"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        http_response r = put(&s, cases[i].name, &images);
        assert_error(&r, 400, "invalid_parameter", "name");
        cr_assert(strstr(r.body, cases[i].says), "%s: %s", cases[i].name, r.body);
        http_response_free(&r);
    }
    assert_dir(&s, "");
    free(images.data);
    stop_server(&s);
}

Test(datasets, bad_content_is_refused_and_leaves_nothing_behind) {
    server s = start_server();
    blob keep = idx_labels(4);
    json_decref(upload_ok(&s, "keep.idx", &keep, 201, "idx"));

    blob truncated = idx_images(8, 0);
    truncated.len -= 3;
    blob extra = idx_images(8, 5);
    blob labels = idx_labels(8);
    blob wrong_magic = idx_labels(8);
    put_be32(wrong_magic.data, 0x0c03); /* int32 images: not what a train job reads */
    blob zero = idx_labels(0);
    blob plain_as_gz = idx_labels(3);
    blob short_gz_src = idx_labels(10);
    short_gz_src.len -= 4; /* gzip'd fine, but the idx inside is short */
    blob short_gz = gzipped(&short_gz_src);
    blob corrupt_gz = gzipped(&labels);
    corrupt_gz.data[corrupt_gz.len - 6] ^= 0xff; /* its CRC-32: the data inflates, and fails the check */
    /* A gzip bomb, small: 10 labels declared, 16 MiB inflated (found after 11 bytes). */
    blob bomb_src = {.len = 8 + (16u << 20)};
    bomb_src.data = calloc(1, bomb_src.len);
    put_be32(bomb_src.data, 0x801);
    put_be32(bomb_src.data + 4, 10);
    blob bomb = gzipped(&bomb_src);
    cr_assert_lt(bomb.len, 64 * 1024, "it is small: %zu bytes", bomb.len);
    blob bad_utf8 = text_blob("caf\xc3\xa9 \xff\xfe here");
    blob cut_utf8 = text_blob("ends mid-character \xe2\x82");
    blob empty = {.data = (unsigned char *)"", .len = 0};
    const struct {
        const char *name;
        const blob *body;
        const char *says;
    } cases[] = {
        {"short.idx", &truncated, "truncated images"},
        {"long.idx", &extra, "but the header declares"},
        {"magic.idx", &wrong_magic, "does not begin with the magic"},
        {"zero.idx", &zero, "has no labels"},
        {"plain.idx.gz", &plain_as_gz, "content is not gzip'd"},
        {"gzip-short.idx.gz", &short_gz, "truncated labels"},
        {"gzip-corrupt.idx.gz", &corrupt_gz, "corrupt gzip data"},
        {"bomb.idx.gz", &bomb, "more than 10 bytes of labels"},
        {"text.idx", &bad_utf8, "does not begin with the magic"},
        {"latin1.txt", &bad_utf8, "offset 6"},
        {"cut.txt", &cut_utf8, "offset 19"},
        {"empty.txt", &empty, "empty"},
        {"keep.idx", &truncated, "truncated images"}, /* a bad replacement keeps the old file */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        http_response r = put(&s, cases[i].name, cases[i].body);
        assert_error(&r, 400, "data", "body");
        cr_assert(strstr(r.body, cases[i].says), "%s: %s", cases[i].name, r.body);
        cr_assert(strstr(r.body, "nothing is stored") || strstr(r.body, "empty"), "%s", r.body);
        if (strcmp(cases[i].name, "empty.txt"))
            cr_assert(strstr(r.body, cases[i].name), "the error names the dataset: %s", r.body);
        http_response_free(&r);
    }
    assert_dir(&s, "keep.idx");
    assert_stored(&s, "keep.idx", &keep);
    json_t *v = get_json(&s, "/api/v1/datasets", 200);
    cr_assert_eq(json_array_size(json_object_get(v, "datasets")), 1);
    json_decref(v);
    free(keep.data), free(truncated.data), free(extra.data), free(labels.data), free(wrong_magic.data);
    free(zero.data), free(plain_as_gz.data), free(short_gz_src.data), free(short_gz.data);
    free(corrupt_gz.data), free(bad_utf8.data), free(cut_utf8.data), free(bomb_src.data), free(bomb.data);
    stop_server(&s);
}

Test(datasets, uploads_over_the_size_limit_get_413_naming_it) {
    const char *const flags[] = {"--max-dataset-mb", "1", NULL};
    int err_fd;
    server s = start_server_with(flags, "127.0.0.1", &err_fd);
    size_t big_len = (1u << 20) + 1;
    blob big = {.data = malloc(big_len), .len = big_len};
    memset(big.data, 'a', big_len);
    /* Declared too long: answered from the headers. The client waits for that answer before the
     * body (Expect: 100-continue): sent at once, the body raced the server's closing of the
     * connection, and a send that broke before the answer was read failed the test now and then. */
    const char *const expect[] = {"Expect: 100-continue", NULL};
    http_response r = put_as(&s, "big.txt", &big, expect, false);
    assert_error(&r, 413, "too_large", NULL);
    cr_assert(strstr(r.body, "1 MiB") && strstr(r.body, "--max-dataset-mb"), "%s", r.body);
    http_response_free(&r);
    /* Chunked, no length declared: found while it streams, answered at its end. */
    char auth[300];
    auth_header(&s, auth, sizeof auth);
    size_t chunk = 64 * 1024, chunks = big_len / chunk + 2, cap = 512 + chunks * (chunk + 16);
    char *raw = malloc(cap);
    int n = snprintf(raw, cap, "PUT /api/v1/datasets/big.txt HTTP/1.1\r\nHost: x\r\n%s\r\n"
                               "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n", auth);
    size_t len = (size_t)n;
    for (size_t i = 0; i < chunks; i++) {
        len += (size_t)snprintf(raw + len, cap - len, "%zx\r\n", chunk);
        memset(raw + len, 'b', chunk);
        len += chunk;
        memcpy(raw + len, "\r\n", 2);
        len += 2;
    }
    memcpy(raw + len, "0\r\n\r\n", 5);
    len += 5;
    cr_assert_eq(http_raw(s.port, raw, len, HTTP_TIMEOUT_MS, &r), 0, "%s", http_last_error());
    assert_error(&r, 413, "too_large", NULL);
    http_response_free(&r);
    free(raw);
    /* At the limit exactly is fine. */
    big.len = 1u << 20;
    json_decref(upload_ok(&s, "big.txt", &big, 201, "text"));
    assert_dir(&s, "big.txt");
    free(big.data);
    free(stop_server_with(&s, err_fd));
}

Test(datasets, a_checksum_that_does_not_match_stores_nothing) {
    server s = start_server();
    blob labels = idx_labels(5);
    char hex[65], header[120];
    sha256_of(&labels, hex);
    const char *wrong[] = {"Content-SHA256: 0000000000000000000000000000000000000000000000000000000000000000", NULL};
    http_response r = put_as(&s, "labels.idx", &labels, wrong, false);
    assert_error(&r, 400, "invalid_parameter", "Content-SHA256");
    cr_assert(strstr(r.body, hex), "the error gives the digest received: %s", r.body);
    http_response_free(&r);
    const char *malformed[] = {"Content-SHA256: sha-256=abc", NULL};
    r = put_as(&s, "labels.idx", &labels, malformed, false);
    assert_error(&r, 400, "invalid_parameter", "Content-SHA256");
    cr_assert(strstr(r.body, "64 hex digits"), "%s", r.body);
    http_response_free(&r);
    assert_dir(&s, "");
    /* The right digest, in capitals even, is accepted. */
    for (char *p = hex; *p; p++)
        if (*p >= 'a' && *p <= 'f') *p = (char)(*p - 'a' + 'A');
    snprintf(header, sizeof header, "Content-SHA256: %s", hex);
    const char *right[] = {header, NULL};
    r = put_as(&s, "labels.idx", &labels, right, false);
    cr_assert_eq(r.status, 201, "%s", r.body);
    http_response_free(&r);
    assert_stored(&s, "labels.idx", &labels);
    free(labels.data);
    stop_server(&s);
}

Test(datasets, if_none_match_creates_only_and_uploads_need_the_token) {
    server s = start_server();
    blob first = idx_labels(3), second = idx_labels(7);
    const char *create_only[] = {"If-None-Match: *", NULL};
    http_response r = put_as(&s, "labels.idx", &first, create_only, false);
    cr_assert_eq(r.status, 201, "%s", r.body);
    http_response_free(&r);
    r = put_as(&s, "labels.idx", &second, create_only, false);
    assert_error(&r, 412, "precondition_failed", "If-None-Match");
    http_response_free(&r);
    assert_stored(&s, "labels.idx", &first);
    /* Without the token: 401, and not a byte kept. */
    r = put_as(&s, "other.idx", &second, NULL, true);
    cr_assert_eq(r.status, 401, "%s", r.body);
    http_response_free(&r);
    r = bare_request(&s, "DELETE", "/api/v1/datasets/labels.idx", NULL, NULL);
    cr_assert_eq(r.status, 401, "%s", r.body);
    http_response_free(&r);
    assert_dir(&s, "labels.idx");
    free(first.data), free(second.data);
    stop_server(&s);
}

/* A train spec on four uploaded idx files; epochs as given. */
static char *idx_spec(int epochs, const char *test_labels) {
    char *spec = malloc(1024);
    snprintf(spec, 1024,
             "{\"kind\":\"train\",\"name\":\"uploaded\",\"model\":{\"type\":\"mlp\",\"layers\":[4,8,2]},"
             "\"data\":{\"source\":\"idx\",\"train_images\":\"imgs.idx\",\"train_labels\":\"labels.idx.gz\","
             "\"test_images\":\"./imgs.idx\",\"test_labels\":\"%s\"},"
             "\"optimizer\":{\"type\":\"sgd\",\"lr\":0.5,\"momentum\":0.9},\"batch_size\":4,\"epochs\":%d,"
             "\"seed\":3}",
             test_labels, epochs);
    return spec;
}

Test(datasets, a_train_job_reads_uploaded_idx_files) {
    server s = start_server();
    blob images = idx_images(16, 0), labels = idx_labels(16);
    blob labels_gz = gzipped(&labels);
    json_decref(upload_ok(&s, "imgs.idx", &images, 201, "idx"));
    json_decref(upload_ok(&s, "labels.idx.gz", &labels_gz, 201, "idx.gz"));
    json_decref(upload_ok(&s, "labels.idx", &labels, 201, "idx"));

    /* A spec naming a dataset that is not there: 400 naming the field and what there is. */
    char *spec = idx_spec(50, "nope.idx");
    post_expect(&s, spec, 400, "invalid_spec", "data.test_labels");
    http_response r = request(&s, "POST", "/api/v1/jobs", json_headers, spec);
    cr_assert(strstr(r.body, "'nope.idx' does not exist") && strstr(r.body, "imgs.idx, labels.idx, labels.idx.gz") &&
                  strstr(r.body, "PUT /api/v1/datasets/{name}"),
              "%s", r.body);
    http_response_free(&r);
    free(spec);

    spec = idx_spec(200, "labels.idx");
    int64_t id = submit(&s, spec);
    free(spec);
    json_t *job = wait_succeeded(&s, id);
    json_t *result = json_object_get(job, "result");
    cr_assert_float_eq(json_number_value(json_object_get(result, "accuracy")), 1.0, 1e-9,
                       "the two classes are apart: %s", json_dumps(result, 0));
    json_decref(job);
    free(images.data), free(labels.data), free(labels_gz.data);
    stop_server(&s);
}

Test(datasets, delete_is_refused_while_a_job_names_the_dataset) {
    server s = start_server();
    blob images = idx_images(16, 0), labels = idx_labels(16);
    blob labels_gz = gzipped(&labels);
    json_decref(upload_ok(&s, "imgs.idx", &images, 201, "idx"));
    json_decref(upload_ok(&s, "labels.idx.gz", &labels_gz, 201, "idx.gz"));
    json_decref(upload_ok(&s, "labels.idx", &labels, 201, "idx"));
    json_decref(upload_ok(&s, "spare.idx", &labels, 201, "idx"));

    http_response r = request(&s, "DELETE", "/api/v1/datasets/spare.idx", NULL, NULL);
    cr_assert_eq(r.status, 204, "%s", r.body);
    http_response_free(&r);
    r = request(&s, "DELETE", "/api/v1/datasets/spare.idx", NULL, NULL);
    assert_error(&r, 404, "not_found", NULL);
    http_response_free(&r);
    r = request(&s, "DELETE", "/api/v1/datasets/..%2Fjobs", NULL, NULL);
    assert_error(&r, 400, "invalid_parameter", "name");
    http_response_free(&r);

    /* Long enough to be queued or running while we look. */
    char *spec = idx_spec(100000, "labels.idx");
    int64_t id = submit(&s, spec);
    free(spec);
    char says[64];
    snprintf(says, sizeof says, "job %lld", (long long)id);
    const char *used[] = {"imgs.idx", "labels.idx.gz", "labels.idx"};
    for (size_t i = 0; i < 3; i++) {
        char path[200];
        snprintf(path, sizeof path, "/api/v1/datasets/%s", used[i]);
        r = request(&s, "DELETE", path, NULL, NULL);
        assert_error(&r, 409, "conflict", NULL);
        cr_assert(strstr(r.body, says), "%s", r.body);
        http_response_free(&r);
    }
    r = put(&s, "labels.idx", &labels);
    assert_error(&r, 409, "conflict", NULL);
    cr_assert(strstr(r.body, says), "a replace is refused too: %s", r.body);
    http_response_free(&r);
    assert_dir(&s, "imgs.idx labels.idx labels.idx.gz");

    cr_assert(status_of(&s, "POST", id, "/cancel") / 100 == 2);
    json_decref(wait_state(&s, id, "cancelled", JOB_TIMEOUT_MS));
    for (size_t i = 0; i < 3; i++) {
        char path[200];
        snprintf(path, sizeof path, "/api/v1/datasets/%s", used[i]);
        r = request(&s, "DELETE", path, NULL, NULL);
        cr_assert_eq(r.status, 204, "once the job ended: %s", r.body);
        http_response_free(&r);
    }
    assert_dir(&s, "");
    json_t *v = get_json(&s, "/api/v1/datasets", 200);
    cr_assert_eq(json_array_size(json_object_get(v, "datasets")), 0);
    json_decref(v);
    free(images.data), free(labels.data), free(labels_gz.data);
    stop_server(&s);
    cr_assert_eq(count_rows(&s, "SELECT count(*) FROM datasets", 0), 0, "their records are gone too");
}

Test(datasets, an_upload_a_dying_server_left_is_removed_at_start) {
    server s = start_server();
    stop_server(&s);
    char path[600];
    snprintf(path, sizeof path, "%s/datasets/.upload-AbC123", s.data);
    FILE *f = fopen(path, "wb");
    fputs("half an upload", f);
    fclose(f);
    server again = start_server();
    cr_assert_str_eq(again.data, s.data);
    assert_dir(&again, "");
    stop_server(&again);
}

/* The paragon command: upload with the file's digest, list, refuse a second --new, delete. */
Test(datasets, the_paragon_command_uploads_lists_and_deletes) {
    server s = start_server();
    blob labels = idx_labels(9);
    char file[400], args[600], hex[65];
    snprintf(file, sizeof file, "%s/some-labels.idx", tmpdir);
    FILE *f = fopen(file, "wb");
    cr_assert_not_null(f);
    fwrite(labels.data, 1, labels.len, f);
    fclose(f);
    sha256_of(&labels, hex);
    char *out, *err;

    snprintf(args, sizeof args, "upload '%s' --name labels-idx1-ubyte", file);
    cr_assert_eq(run_cli(&s, args, &out, &err), 0, "%s%s", out, err);
    cr_assert(strstr(out, "uploaded labels-idx1-ubyte") && strstr(out, hex) && strstr(out, "labels 9"), "%s", out);
    free(out), free(err);
    assert_stored(&s, "labels-idx1-ubyte", &labels);

    snprintf(args, sizeof args, "upload '%s' --name labels-idx1-ubyte --new", file);
    cr_assert_eq(run_cli(&s, args, &out, &err), 1, "%s%s", out, err);
    cr_assert(strstr(err, "precondition_failed"), "%s", err);
    free(out), free(err);
    snprintf(args, sizeof args, "upload '%s'", file); /* its own name */
    cr_assert_eq(run_cli(&s, args, &out, &err), 0, "%s%s", out, err);
    free(out), free(err);
    snprintf(args, sizeof args, "upload '%s' --name 'no good.idx'", file);
    cr_assert_eq(run_cli(&s, args, &out, &err), 1);
    cr_assert(strstr(err, "holds ' '"), "the server's reason: %s", err);
    free(out), free(err);

    cr_assert_eq(run_cli(&s, "datasets", &out, &err), 0, "%s", err);
    cr_assert(strstr(out, "labels-idx1-ubyte") && strstr(out, "some-labels.idx") && strstr(out, "labels 9"), "%s",
              out);
    free(out), free(err);
    cr_assert_eq(run_cli(&s, "datasets rm some-labels.idx", &out, &err), 0, "%s", err);
    free(out), free(err);
    cr_assert_eq(run_cli(&s, "datasets rm some-labels.idx", &out, &err), 1);
    cr_assert(strstr(err, "does not exist"), "%s", err);
    free(out), free(err);
    assert_dir(&s, "labels-idx1-ubyte");
    free(labels.data);
    stop_server(&s);
}
