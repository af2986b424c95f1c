/* test_data.c: datasets (engine/tensor/data.c, engine/tensor/idx.c): the "data" spec and its errors, idx files
 * written here as fixtures (plain and gzip) with every kind of corruption, path confinement,
 * the spiral generator, and Fashion-MNIST from the Debian package. */
#include <criterion/criterion.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "tensor/idx.h"
#include "tensor/tensor.h"

#define MAGIC_IMAGES 0x00000803u
#define MAGIC_LABELS 0x00000801u

static char tmpdir[64];

static void make_tmpdir(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/pgn_test_data_XXXXXX");
    cr_assert_not_null(mkdtemp(tmpdir), "mkdtemp: %s", strerror(errno));
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static void remove_tmpdir(void) { nftw(tmpdir, remove_entry, 16, FTW_DEPTH | FTW_PHYS); }

TestSuite(data, .init = make_tmpdir, .fini = remove_tmpdir);

/* ---- fixtures ------------------------------------------------------------------------------- */

typedef struct {
    unsigned char bytes[4096];
    size_t len;
} blob;

static void put32(blob *b, uint32_t v) {
    for (int i = 3; i >= 0; i--) b->bytes[b->len++] = (unsigned char)(v >> (8 * i));
}

static void put8(blob *b, const unsigned char *v, size_t n) {
    cr_assert_leq(b->len + n, sizeof b->bytes);
    memcpy(b->bytes + b->len, v, n);
    b->len += n;
}

/* n images of rows x cols whose pixels cycle through `pixels`. */
static blob images_blob(uint32_t n, uint32_t rows, uint32_t cols, const unsigned char *pixels,
                        size_t n_pixels) {
    blob b = {.len = 0};
    put32(&b, MAGIC_IMAGES);
    put32(&b, n);
    put32(&b, rows);
    put32(&b, cols);
    for (size_t i = 0; i < (size_t)n * rows * cols; i++) put8(&b, &pixels[i % n_pixels], 1);
    return b;
}

static blob labels_blob(uint32_t n, const unsigned char *labels) {
    blob b = {.len = 0};
    put32(&b, MAGIC_LABELS);
    put32(&b, n);
    put8(&b, labels, n);
    return b;
}

/* Writes tmpdir/name, through zlib when gz. */
static void write_file(const char *name, const void *bytes, size_t len, bool gz) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    if (gz) {
        gzFile f = gzopen(path, "wb");
        cr_assert_not_null(f, "gzopen %s", path);
        if (len) cr_assert_eq(gzwrite(f, bytes, (unsigned)len), (int)len);
        cr_assert_eq(gzclose(f), Z_OK);
    } else {
        FILE *f = fopen(path, "wb");
        cr_assert_not_null(f, "fopen %s: %s", path, strerror(errno));
        if (len) cr_assert_eq(fwrite(bytes, 1, len, f), len);
        cr_assert_eq(fclose(f), 0);
    }
}

static void write_blob(const char *name, const blob *b, bool gz) {
    write_file(name, b->bytes, b->len, gz);
}

static const unsigned char pixels[] = {0, 51, 255, 102};
static const unsigned char labels3[] = {0, 1, 2};

/* A valid idx set: train (plain) 3 images 2x2, test (gzip) 3 images 2x2. */
static void write_valid_set(void) {
    blob img = images_blob(3, 2, 2, pixels, 4), lab = labels_blob(3, labels3);
    write_blob("train-images", &img, false);
    write_blob("train-labels", &lab, false);
    write_blob("test-images.gz", &img, true);
    write_blob("test-labels.gz", &lab, true);
}

static pgn_data_spec idx_spec(const char *train_images, const char *train_labels,
                              const char *test_images, const char *test_labels) {
    pgn_data_spec s;
    memset(&s, 0, sizeof s);
    s.source = PGN_DATA_IDX;
    snprintf(s.train_images, sizeof s.train_images, "%s", train_images);
    snprintf(s.train_labels, sizeof s.train_labels, "%s", train_labels);
    snprintf(s.test_images, sizeof s.test_images, "%s", test_images);
    snprintf(s.test_labels, sizeof s.test_labels, "%s", test_labels);
    return s;
}

static pgn_data_spec valid_idx_spec(void) {
    return idx_spec("train-images", "train-labels", "test-images.gz", "test-labels.gz");
}

/* Loads spec from tmpdir expecting failure; both sets are left empty. */
static pgn_error load_err(const pgn_data_spec *spec) {
    pgn_dataset train, test;
    pgn_error err = {0};
    cr_assert_eq(pgn_dataset_load(spec, tmpdir, &train, &test, &err), -1, "loaded");
    cr_assert_null(train.x);
    cr_assert_null(test.x);
    cr_assert(err.message[0]);
    return err;
}

/* ---- idx reading ---------------------------------------------------------------------------- */

Test(data, idx_plain_and_gzip_load_exactly) {
    write_valid_set();
    pgn_data_spec spec = valid_idx_spec();
    pgn_dataset train, test;
    pgn_error err = {0};
    cr_assert_eq(pgn_dataset_load(&spec, tmpdir, &train, &test, &err), 0, "%s", err.message);
    const pgn_dataset *sets[] = {&train, &test};
    for (int s = 0; s < 2; s++) {
        const pgn_dataset *d = sets[s];
        cr_assert_eq(d->n, 3);
        cr_assert_eq(d->features, 4);
        cr_assert_eq(d->classes, 3);
        for (int i = 0; i < 12; i++) {
            float want = (float)pixels[i % 4] / 255.0f;
            cr_assert_eq(d->x[i], want, "set %d pixel %d: %.9g != %.9g", s, i, d->x[i], want);
        }
        cr_assert_eq(d->x[0], 0.0f);
        cr_assert_eq(d->x[1], 0.2f);
        cr_assert_eq(d->x[2], 1.0f);
        for (int i = 0; i < 3; i++) cr_assert_eq(d->y[i], i);
    }
    pgn_dataset_free(&train);
    pgn_dataset_free(&test);
    cr_assert_null(train.x);
}

Test(data, idx_reader_reports_shape) {
    blob img = images_blob(2, 3, 5, pixels, 4);
    write_blob("img.gz", &img, true);
    char path[256];
    snprintf(path, sizeof path, "%s/img.gz", tmpdir);
    float *x;
    int n, rows, cols;
    pgn_error err = {0};
    cr_assert_eq(pgn_idx_read_images(path, NULL, &x, &n, &rows, &cols, &err), 0, "%s", err.message);
    cr_assert_eq(n, 2);
    cr_assert_eq(rows, 3);
    cr_assert_eq(cols, 5);
    cr_assert_eq(x[29], (float)pixels[29 % 4] / 255.0f);
    free(x);
}

/* Each case replaces one file of the valid set; the error must name that file and the problem. */
typedef struct {
    const char *name;     /* file of the set to replace */
    blob content;
    bool gz;
    const char *field;    /* expected err.field */
    const char *fragment; /* expected in the message */
} corrupt_case;

static void check_corrupt(const corrupt_case *c) {
    write_valid_set();
    write_blob(c->name, &c->content, c->gz);
    pgn_data_spec spec = valid_idx_spec();
    pgn_error err = load_err(&spec);
    cr_assert_str_eq(pgn_error_code_name(err.code), "data", "%s: %s", c->fragment, err.message);
    cr_assert_str_eq(err.field, c->field, "%s", err.message);
    cr_assert(strstr(err.message, c->name), "no file name '%s' in: %s", c->name, err.message);
    cr_assert(strstr(err.message, c->fragment), "no '%s' in: %s", c->fragment, err.message);
    cr_assert(!strncmp(err.message, c->field, strlen(c->field)), "%s", err.message);
}

static blob cut(blob b, size_t len) {
    b.len = len;
    return b;
}

Test(data, corrupt_idx_files_name_file_and_problem) {
    blob img = images_blob(3, 2, 2, pixels, 4), lab = labels_blob(3, labels3);
    blob extra = img;
    put8(&extra, pixels, 1);
    corrupt_case cases[] = {
        {"train-images", lab, false, "data.train_images",
         "not an idx image file: it does not begin with the magic 0x00000803 (unsigned-byte "
         "images [n][rows][cols]); it has the label magic 0x00000801"},
        {"test-labels.gz", img, true, "data.test_labels",
         "not an idx label file: it does not begin with the magic 0x00000801 (unsigned-byte "
         "labels [n]); it has the image magic 0x00000803"},
        {"train-images", cut(img, img.len - 1), false, "data.train_images",
         "truncated images: expected 12 bytes after the 16-byte header, got 11"},
        {"test-images.gz", cut(img, img.len - 5), true, "data.test_images",
         "truncated images: expected 12 bytes after the 16-byte header, got 7"},
        {"train-labels", cut(lab, lab.len - 1), false, "data.train_labels",
         "truncated labels: expected 3 bytes after the 8-byte header, got 2"},
        {"test-labels.gz", cut(lab, lab.len - 3), true, "data.test_labels",
         "truncated labels: expected 3 bytes after the 8-byte header, got 0"},
        {"train-images", cut(img, 10), false, "data.train_images",
         "truncated header: expected 16 bytes, got 10"},
        {"train-labels", cut(lab, 2), false, "data.train_labels", "truncated header"},
        {"train-labels", labels_blob(2, labels3), false, "data.train_labels",
         "2 labels, but"},
        {"train-images", images_blob(0, 2, 2, pixels, 4), false, "data.train_images",
         "has no images"},
        {"train-labels", labels_blob(0, labels3), false, "data.train_labels", "has no labels"},
        {"train-images", images_blob(0, 5000, 2, pixels, 4), false, "data.train_images",
         "has no images"},
        {"test-images.gz", extra, true, "data.test_images", "but the header declares 12"},
        {"train-images", extra, false, "data.train_images", "13 bytes of images"},
        {"test-images.gz", images_blob(3, 2, 3, pixels, 4), true, "data.test_images",
         "images have 6 pixels, but the training images have 4"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_corrupt(&cases[i]);

    /* The count mismatch names both files and both counts. */
    write_valid_set();
    blob two = labels_blob(2, labels3);
    write_blob("train-labels", &two, false);
    pgn_data_spec spec = valid_idx_spec();
    pgn_error err = load_err(&spec);
    cr_assert(strstr(err.message, "train-labels: 2 labels, but "), "%s", err.message);
    cr_assert(strstr(err.message, "train-images has 3 images"), "%s", err.message);
}

/* zlib's gzread ends a file quietly at bytes after its last member that are no member: such a
 * file was read (and uploaded) whole. Now it is refused by the readers and by inspection alike;
 * several members (gzip allows them) still read as one. */
Test(data, bytes_after_a_gzip_files_members_are_refused_and_members_after_members_read) {
    write_valid_set();
    char path[512];
    snprintf(path, sizeof path, "%s/test-images.gz", tmpdir);
    FILE *f = fopen(path, "ab");
    cr_assert_not_null(f);
    fputs("appended", f);
    fclose(f);
    pgn_data_spec spec = valid_idx_spec();
    pgn_error err = load_err(&spec);
    cr_assert(strstr(err.message, "8 bytes after the end of its gzip data"), "%s", err.message);
    cr_assert_str_eq(err.field, "data.test_images");
    pgn_idx_info info;
    cr_assert_eq(pgn_idx_inspect(path, "test-images.gz", &info, &err), -1);
    cr_assert(strstr(err.message, "test-images.gz: 8 bytes after the end of its gzip data"), "%s", err.message);

    /* the header in one member, the pixels in a second */
    blob img = images_blob(3, 2, 2, pixels, 4);
    for (int part = 0; part < 2; part++) {
        gzFile g = gzopen(path, part ? "ab" : "wb");
        cr_assert_not_null(g);
        size_t from = part ? 16 : 0, len = part ? img.len - 16 : 16;
        cr_assert_eq(gzwrite(g, img.bytes + from, (unsigned)len), (int)len);
        cr_assert_eq(gzclose(g), Z_OK);
    }
    cr_assert_eq(pgn_idx_inspect(path, "test-images.gz", &info, &err), 0, "%s", err.message);
    pgn_dataset train, test;
    cr_assert_eq(pgn_dataset_load(&spec, tmpdir, &train, &test, &err), 0, "%s", err.message);
    cr_assert_eq(test.n, 3);
    pgn_dataset_free(&train);
    pgn_dataset_free(&test);
}

/* A path pointed at a file that is not an idx file (a token, a key) must not make the error
 * message a way to read it: the message says what is wrong and quotes none of its bytes, neither
 * as text nor as the number its first four bytes would make. */
Test(data, a_file_that_is_not_idx_is_refused_without_quoting_it) {
    static const char secret[] = "s3cr3t-T0KEN-9f8e7d6c5b4a";
    struct {
        const char *name, *field, *kind;
        bool gz;
    } cases[] = {
        {"train-images", "data.train_images", "image", false},
        {"train-labels", "data.train_labels", "label", false},
        {"test-images.gz", "data.test_images", "image", true},
        {"test-labels.gz", "data.test_labels", "label", true},
    };
    const unsigned char *s = (const unsigned char *)secret;
    uint32_t first = (uint32_t)s[0] << 24 | (uint32_t)s[1] << 16 | (uint32_t)s[2] << 8 | s[3];
    char forms[4][32];
    snprintf(forms[0], sizeof forms[0], "%08x", first);
    snprintf(forms[1], sizeof forms[1], "%08X", first);
    snprintf(forms[2], sizeof forms[2], "%u", first);
    snprintf(forms[3], sizeof forms[3], "%d", (int32_t)first);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_valid_set();
        write_file(cases[i].name, secret, strlen(secret), cases[i].gz);
        pgn_data_spec spec = valid_idx_spec();
        pgn_error err = load_err(&spec);
        cr_assert_str_eq(pgn_error_code_name(err.code), "data", "%s", err.message);
        cr_assert_str_eq(err.field, cases[i].field, "%s", err.message);
        char want[128];
        snprintf(want, sizeof want, "%s: not an idx %s file: it does not begin with the magic",
                 cases[i].name, cases[i].kind);
        cr_assert(strstr(err.message, want), "no '%s' in: %s", want, err.message);
        /* No run of 3 of the secret's bytes anywhere in the message, the random name of the
         * temporary directory (which could hold one by chance) left out. */
        char rest[sizeof err.message];
        const char *dir = strstr(err.message, tmpdir);
        cr_assert_not_null(dir, "%s", err.message);
        snprintf(rest, sizeof rest, "%.*s%s", (int)(dir - err.message), err.message,
                 dir + strlen(tmpdir));
        for (size_t at = 0; at + 3 <= strlen(secret); at++) {
            char piece[4] = {secret[at], secret[at + 1], secret[at + 2], 0};
            cr_assert_null(strstr(rest, piece), "'%s' of the file quoted in: %s", piece,
                           err.message);
        }
        for (int k = 0; k < 4; k++)
            cr_assert_null(strstr(rest, forms[k]), "the first bytes as %s in: %s", forms[k],
                           err.message);
    }
}

/* Headers whose numbers are absurd are refused before anything is allocated from them. */
Test(data, absurd_headers_are_refused) {
    struct {
        uint32_t n, rows, cols;
        bool gz;
        const char *fragment;
    } cases[] = {
        {1, 5000, 2, false, "declares images of 5000x2 pixels (rows and cols must be 1..4096)"},
        {1, 2, 0, false, "declares images of 2x0 pixels"},
        {20000000, 2, 2, false, "declares 20000000 images, more than the 10000000 allowed"},
        {10000000, 4096, 4096, false, "more than the 1073741824 allowed"},
        /* A 784 MB claim in a tiny gzip file: found truncated by decoding, not by allocating. */
        {1000000, 28, 28, true, "truncated images: expected 784000000 bytes after the 16-byte "
                                "header, got 12"},
        {1000000, 28, 28, false, "truncated images: expected 784000000 bytes after the 16-byte "
                                 "header, got 12"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_valid_set();
        blob b = images_blob(3, 2, 2, pixels, 4);
        b.len = 4;
        put32(&b, cases[i].n);
        put32(&b, cases[i].rows);
        put32(&b, cases[i].cols);
        b.len += 12;
        write_blob("train-images", &b, cases[i].gz);
        pgn_data_spec spec = valid_idx_spec();
        pgn_error err = load_err(&spec);
        cr_assert(strstr(err.message, cases[i].fragment), "case %zu: %s", i, err.message);
        cr_assert(strstr(err.message, "train-images"), "%s", err.message);
    }
    write_valid_set();
    blob lab = labels_blob(3, labels3);
    lab.len = 4;
    put32(&lab, 20000000);
    lab.len += 3;
    write_blob("train-labels", &lab, false);
    pgn_data_spec spec = valid_idx_spec();
    pgn_error err = load_err(&spec);
    cr_assert(strstr(err.message, "declares 20000000 labels"), "%s", err.message);
}

Test(data, missing_and_unreadable_files_are_named) {
    write_valid_set();
    pgn_data_spec spec = idx_spec("train-images", "nope-labels", "test-images.gz", "test-labels.gz");
    pgn_error err = load_err(&spec);
    cr_assert_str_eq(err.field, "data.train_labels");
    cr_assert(strstr(err.message, "nope-labels"), "%s", err.message);
    cr_assert(strstr(err.message, strerror(ENOENT)), "%s", err.message);

    char sub[256];
    snprintf(sub, sizeof sub, "%s/adir", tmpdir);
    cr_assert_eq(mkdir(sub, 0700), 0);
    spec = idx_spec("adir", "train-labels", "test-images.gz", "test-labels.gz");
    err = load_err(&spec);
    cr_assert(strstr(err.message, "adir: not a regular file"), "%s", err.message);

    /* gzip magic followed by garbage: zlib's complaint, with the file's name. */
    const unsigned char junk[] = {0x1f, 0x8b, 0x08, 0x00, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,
                                  13, 14, 15, 16, 17, 18, 19, 20};
    write_file("junk.gz", junk, sizeof junk, false);
    spec = idx_spec("junk.gz", "train-labels", "test-images.gz", "test-labels.gz");
    err = load_err(&spec);
    cr_assert_str_eq(err.field, "data.train_images");
    cr_assert(strstr(err.message, "junk.gz: corrupt gzip data: "), "%s", err.message);
    cr_assert(!strstr(err.message, "<fd:"), "%s", err.message);
}

Test(data, empty_file_is_a_truncated_header) {
    write_valid_set();
    write_file("empty", "", 0, false);
    pgn_data_spec spec = idx_spec("empty", "train-labels", "test-images.gz", "test-labels.gz");
    pgn_error err = load_err(&spec);
    cr_assert(strstr(err.message, "empty: truncated header: expected 16 bytes, got 0"), "%s",
              err.message);
}

/* Every single-byte corruption of a valid file, plain and gzip: an error or a load, never a
 * crash or a leak (ASan watches). */
Test(data, mutated_files_never_crash) {
    blob img = images_blob(3, 2, 2, pixels, 4);
    const unsigned char values[] = {0x00, 0x01, 0x08, 0x7f, 0xff};
    int failures = 0, loads = 0;
    for (int gz = 0; gz < 2; gz++) {
        for (size_t pos = 0; pos < img.len; pos++) {
            for (size_t v = 0; v < sizeof values; v++) {
                write_valid_set();
                blob m = img;
                m.bytes[pos] = values[v];
                write_blob("train-images", &m, gz);
                pgn_data_spec spec = valid_idx_spec();
                pgn_dataset train, test;
                pgn_error err = {0};
                if (pgn_dataset_load(&spec, tmpdir, &train, &test, &err)) {
                    cr_assert(strstr(err.message, "train-images"), "%s", err.message);
                    failures++;
                } else {
                    loads++;
                    pgn_dataset_free(&train);
                    pgn_dataset_free(&test);
                }
            }
        }
    }
    cr_assert_gt(failures, 0);
    cr_assert_gt(loads, 0);
    /* Raw gzip bytes, mutated: zlib's integrity checks must turn damage into errors. */
    char path[256];
    snprintf(path, sizeof path, "%s/train-images", tmpdir);
    write_blob("train-images", &img, true);
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f);
    unsigned char gzbytes[512];
    size_t gzlen = fread(gzbytes, 1, sizeof gzbytes, f);
    fclose(f);
    for (size_t pos = 0; pos < gzlen; pos++) {
        unsigned char copy[512];
        memcpy(copy, gzbytes, gzlen);
        copy[pos] ^= 0x5a;
        write_file("train-images", copy, gzlen, false);
        pgn_data_spec spec = valid_idx_spec();
        pgn_dataset train, test;
        pgn_error err = {0};
        if (pgn_dataset_load(&spec, tmpdir, &train, &test, &err) == 0) {
            pgn_dataset_free(&train);
            pgn_dataset_free(&test);
        } else {
            cr_assert(strstr(err.message, "train-images"), "%s", err.message);
        }
    }
}

/* ---- path confinement ----------------------------------------------------------------------- */

static pgn_error parse_err(const char *text) {
    json_error_t jerr;
    json_t *j = json_loads(text, JSON_ALLOW_NUL, &jerr);
    cr_assert_not_null(j, "bad test JSON %s: %s", text, jerr.text);
    pgn_data_spec spec;
    pgn_error err = {0};
    cr_assert_eq(pgn_data_spec_parse(j, &spec, &err), -1, "accepted: %s", text);
    json_decref(j);
    cr_assert_str_eq(pgn_error_code_name(err.code), "invalid_spec");
    return err;
}

#define IDX_JSON(a, b, c, d)                                                                      \
    "{\"source\":\"idx\",\"train_images\":" a ",\"train_labels\":" b ",\"test_images\":" c      \
    ",\"test_labels\":" d "}"

Test(data, idx_paths_are_confined_to_the_data_dir) {
    pgn_error err = parse_err(IDX_JSON("\"/etc/passwd\"", "\"l\"", "\"i\"", "\"l\""));
    cr_assert_str_eq(err.field, "data.train_images");
    cr_assert(strstr(err.message, "data.train_images: must be a path relative"), "%s", err.message);
    err = parse_err(IDX_JSON("\"i\"", "\"a/../../l\"", "\"i\"", "\"l\""));
    cr_assert_str_eq(err.field, "data.train_labels");
    cr_assert(strstr(err.message, "'..'"), "%s", err.message);
    err = parse_err(IDX_JSON("\"i\"", "\"l\"", "\"..\"", "\"l\""));
    cr_assert_str_eq(err.field, "data.test_images");
    err = parse_err(IDX_JSON("\"i\"", "\"l\"", "\"i\"", "\"x/..\""));
    cr_assert_str_eq(err.field, "data.test_labels");

    /* "..x" and "x.." are names, not parent links. */
    json_t *j = json_loads(IDX_JSON("\"..x\"", "\"x..\"", "\"./a/b\"", "\"a//b\""), 0, NULL);
    pgn_data_spec spec;
    pgn_error ok = {0};
    cr_assert_eq(pgn_data_spec_parse(j, &spec, &ok), 0, "%s", ok.message);
    json_decref(j);

    /* A symlink inside the data dir that leads out of it is refused at load time. */
    write_valid_set();
    char outside[128], link[256];
    snprintf(outside, sizeof outside, "%s-outside", tmpdir);
    cr_assert_eq(mkdir(outside, 0700), 0);
    char target[256];
    snprintf(target, sizeof target, "%s/labels", outside);
    blob lab = labels_blob(3, labels3);
    FILE *f = fopen(target, "wb");
    cr_assert_not_null(f);
    fwrite(lab.bytes, 1, lab.len, f);
    fclose(f);
    snprintf(link, sizeof link, "%s/escape", tmpdir);
    cr_assert_eq(symlink(target, link), 0);
    snprintf(link, sizeof link, "%s/escape-dir", tmpdir);
    cr_assert_eq(symlink(outside, link), 0);
    snprintf(link, sizeof link, "%s/inside", tmpdir);
    cr_assert_eq(symlink("train-labels", link), 0);

    spec = idx_spec("train-images", "escape", "test-images.gz", "test-labels.gz");
    err = load_err(&spec);
    cr_assert_str_eq(pgn_error_code_name(err.code), "invalid_spec");
    cr_assert_str_eq(err.field, "data.train_labels");
    cr_assert(strstr(err.message, "data.train_labels: 'escape' resolves to"), "%s", err.message);
    cr_assert(strstr(err.message, "outside the data directory"), "%s", err.message);

    spec = idx_spec("train-images", "train-labels", "test-images.gz", "escape-dir/labels");
    err = load_err(&spec);
    cr_assert_str_eq(err.field, "data.test_labels");
    cr_assert(strstr(err.message, "outside the data directory"), "%s", err.message);

    /* Specs built without the parser are checked again at load time. */
    spec = idx_spec("/etc/passwd", "train-labels", "test-images.gz", "test-labels.gz");
    err = load_err(&spec);
    cr_assert_str_eq(err.field, "data.train_images");

    /* A symlink that stays inside is fine. */
    spec = idx_spec("train-images", "inside", "test-images.gz", "test-labels.gz");
    pgn_dataset train, test;
    pgn_error e2 = {0};
    cr_assert_eq(pgn_dataset_load(&spec, tmpdir, &train, &test, &e2), 0, "%s", e2.message);
    pgn_dataset_free(&train);
    pgn_dataset_free(&test);

    remove(target);
    rmdir(outside);
}

/* ---- the data spec -------------------------------------------------------------------------- */

Test(data, spec_errors_name_their_field) {
    struct {
        const char *text, *field, *fragment;
    } cases[] = {
        {"[]", "data", "data: must be an object"},
        {"{}", "data.source", "data.source: required"},
        {"{\"source\":3}", "data.source", "data.source: must be a string"},
        {"{\"source\":\"cifar\"}", "data.source", "data.source: unknown data source 'cifar'"},
        {"{\"source\":\"xor\",\"colour\":1}", "data.colour", "data.colour: unknown field"},
        {"{\"source\":\"xor\",\"samples\":10}", "data.samples",
         "data.samples: does not apply to source \"xor\""},
        {"{\"source\":\"fashion-mnist\",\"train_images\":\"a\"}", "data.train_images",
         "does not apply to source \"fashion-mnist\""},
        {"{\"source\":\"spiral\",\"train_labels\":\"a\"}", "data.train_labels",
         "does not apply to source \"spiral\""},
        {"{\"source\":\"idx\",\"classes\":3}", "data.classes", "does not apply"},
        {"{\"source\":\"xor\",\"train_samples\":3}", "data.train_samples", "does not apply to source \"xor\""},
        {"{\"source\":\"fashion-mnist\",\"train_samples\":0}", "data.train_samples",
         "data.train_samples: must be between 1 and 10000000"},
        {"{\"source\":\"fashion-mnist\",\"test_samples\":\"all\"}", "data.test_samples", "must be an integer"},
        {"{\"source\":\"spiral\",\"samples\":0}", "data.samples",
         "data.samples: must be between 1 and 100000"},
        {"{\"source\":\"spiral\",\"samples\":100001}", "data.samples", "must be between 1 and 100000"},
        {"{\"source\":\"spiral\",\"samples\":\"10\"}", "data.samples", "must be an integer"},
        {"{\"source\":\"spiral\",\"samples\":1.5}", "data.samples", "must be an integer"},
        {"{\"source\":\"spiral\",\"classes\":1}", "data.classes",
         "data.classes: must be between 2 and 32"},
        {"{\"source\":\"spiral\",\"classes\":33}", "data.classes", "must be between 2 and 32"},
        {"{\"source\":\"idx\",\"train_images\":\"i\",\"test_images\":\"i\",\"test_labels\":\"l\"}",
         "data.train_labels", "data.train_labels: required"},
        {IDX_JSON("\"i\"", "\"l\"", "\"i\"", "null"), "data.test_labels", "must be a string"},
        {IDX_JSON("7", "\"l\"", "\"i\"", "\"l\""), "data.train_images", "must be a string"},
        {IDX_JSON("\"i\"", "\"l\"", "\"\"", "\"l\""), "data.test_images", "must not be empty"},
        {IDX_JSON("\"i\\u0000x\"", "\"l\"", "\"i\"", "\"l\""), "data.train_images", "NUL"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        pgn_error err = parse_err(cases[i].text);
        cr_assert_str_eq(err.field, cases[i].field, "%s: %s", cases[i].text, err.message);
        cr_assert(strstr(err.message, cases[i].fragment), "%s: %s", cases[i].text, err.message);
        cr_assert(!strncmp(err.message, cases[i].field, strlen(cases[i].field)), "%s", err.message);
    }
    char long_path[400];
    memset(long_path, 'a', 300);
    long_path[300] = '\0';
    char text[600];
    snprintf(text, sizeof text, IDX_JSON("\"i\"", "\"%s\"", "\"i\"", "\"l\""), long_path);
    pgn_error err = parse_err(text);
    cr_assert_str_eq(err.field, "data.train_labels");
    cr_assert(strstr(err.message, "at most 255 characters"), "%s", err.message);
}

static json_t *normalise(const char *text, pgn_data_spec *spec) {
    json_t *j = json_loads(text, 0, NULL);
    cr_assert_not_null(j);
    pgn_error err = {0};
    cr_assert_eq(pgn_data_spec_parse(j, spec, &err), 0, "%s", err.message);
    json_decref(j);
    return pgn_data_spec_to_json(spec);
}

Test(data, spec_normalises_with_defaults) {
    struct {
        const char *in, *out;
    } cases[] = {
        {"{\"source\":\"xor\"}", "{\"source\":\"xor\"}"},
        {"{\"source\":\"spiral\"}", "{\"source\":\"spiral\",\"samples\":100,\"classes\":3}"},
        {"{\"classes\":5,\"source\":\"spiral\"}",
         "{\"source\":\"spiral\",\"samples\":100,\"classes\":5}"},
        {"{\"source\":\"fashion-mnist\"}", "{\"source\":\"fashion-mnist\"}"},
        {"{\"test_samples\":8,\"source\":\"fashion-mnist\",\"train_samples\":32}",
         "{\"source\":\"fashion-mnist\",\"train_samples\":32,\"test_samples\":8}"},
        {IDX_JSON("\"a\"", "\"b\"", "\"c/d\"", "\"e\""),
         "{\"source\":\"idx\",\"train_images\":\"a\",\"train_labels\":\"b\","
         "\"test_images\":\"c/d\",\"test_labels\":\"e\"}"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        pgn_data_spec a, b;
        json_t *j = normalise(cases[i].in, &a);
        char *text = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
        cr_assert_str_eq(text, cases[i].out);
        json_t *again = normalise(text, &b);
        cr_assert_eq(memcmp(&a, &b, sizeof a), 0, "%s does not round-trip", text);
        free(text);
        json_decref(j);
        json_decref(again);
    }
}

Test(data, shapes_known_without_files) {
    pgn_data_spec s;
    int f = -1, c = -1;
    json_decref(normalise("{\"source\":\"spiral\",\"classes\":7}", &s));
    cr_assert_eq(pgn_data_shape(&s, &f, &c), 1);
    cr_assert_eq(f, 2);
    cr_assert_eq(c, 7);
    json_decref(normalise("{\"source\":\"fashion-mnist\"}", &s));
    cr_assert_eq(pgn_data_shape(&s, &f, &c), 1);
    cr_assert_eq(f, 784);
    cr_assert_eq(c, 10);
    json_decref(normalise("{\"source\":\"xor\"}", &s));
    cr_assert_eq(pgn_data_shape(&s, &f, &c), 1);
    cr_assert_eq(f, 2);
    cr_assert_eq(c, 2);
    json_decref(normalise(IDX_JSON("\"a\"", "\"b\"", "\"c\"", "\"d\""), &s));
    cr_assert_eq(pgn_data_shape(&s, &f, &c), 0);

    /* The job spec checks the model against the shape. */
    const char *text = "{\"kind\":\"train\",\"model\":{\"type\":\"mlp\",\"layers\":[784,32,9]},"
                       "\"data\":{\"source\":\"fashion-mnist\"}}";
    pgn_job_spec spec;
    pgn_error err = {0};
    cr_assert_eq(pgn_spec_parse_text(text, strlen(text), &spec, &err), -1);
    cr_assert_str_eq(err.field, "model.layers[2]", "%s", err.message);
}

/* ---- spiral --------------------------------------------------------------------------------- */

static void load_spiral(int samples, int classes, pgn_dataset *train, pgn_dataset *test) {
    pgn_data_spec s = {.source = PGN_DATA_SPIRAL, .samples = samples, .classes = classes};
    pgn_error err = {0};
    cr_assert_eq(pgn_dataset_load(&s, tmpdir, train, test, &err), 0, "%s", err.message);
}

Test(data, spiral_is_balanced_deterministic_and_distinct_from_its_test_set) {
    pgn_dataset a, at, b, bt;
    load_spiral(50, 4, &a, &at);
    load_spiral(50, 4, &b, &bt);
    cr_assert_eq(a.n, 200);
    cr_assert_eq(a.features, 2);
    cr_assert_eq(a.classes, 4);
    cr_assert_eq(at.n, 200);
    cr_assert_eq(at.classes, 4);
    int count[4] = {0};
    for (int i = 0; i < a.n; i++) {
        cr_assert(a.y[i] >= 0 && a.y[i] < 4);
        count[a.y[i]]++;
        float r2 = a.x[2 * i] * a.x[2 * i] + a.x[2 * i + 1] * a.x[2 * i + 1];
        cr_assert(r2 <= 1.0001f, "point %d outside the unit disc", i);
    }
    for (int k = 0; k < 4; k++) cr_assert_eq(count[k], 50);
    cr_assert_eq(memcmp(a.x, b.x, sizeof *a.x * 400), 0, "two loads differ");
    cr_assert_eq(memcmp(at.x, bt.x, sizeof *a.x * 400), 0, "two test loads differ");
    cr_assert_eq(memcmp(a.y, at.y, sizeof *a.y * 200), 0, "labels follow the same order");
    int same = 0;
    for (int i = 0; i < 400; i++) same += a.x[i] == at.x[i];
    cr_assert_lt(same, 10, "train and test sets share %d coordinates", same);
    pgn_dataset_free(&a);
    pgn_dataset_free(&at);
    pgn_dataset_free(&b);
    pgn_dataset_free(&bt);

    pgn_dataset d, dt;
    load_spiral(100, 3, &d, &dt); /* the defaults */
    cr_assert_eq(d.n, 300);
    pgn_dataset_free(&d);
    pgn_dataset_free(&dt);
}

/* ---- fashion-mnist -------------------------------------------------------------------------- */

Test(data, fashion_mnist_loads_from_the_debian_package) {
    pgn_data_spec s = {.source = PGN_DATA_FASHION_MNIST};
    pgn_dataset train, test;
    pgn_error err = {0};
    /* tmpdir has no fashion-mnist/, so the package's directory is used. */
    cr_assert_eq(pgn_dataset_load(&s, tmpdir, &train, &test, &err), 0, "%s", err.message);
    cr_assert_eq(train.n, 60000);
    cr_assert_eq(test.n, 10000);
    const pgn_dataset *sets[] = {&train, &test};
    for (int k = 0; k < 2; k++) {
        const pgn_dataset *d = sets[k];
        cr_assert_eq(d->features, 784);
        cr_assert_eq(d->classes, 10);
        int count[10] = {0};
        for (int i = 0; i < d->n; i++) {
            cr_assert(d->y[i] >= 0 && d->y[i] < 10);
            count[d->y[i]]++;
        }
        /* Fashion-MNIST is exactly balanced: 6000 / 1000 per class. */
        for (int c = 0; c < 10; c++) cr_assert_eq(count[c], d->n / 10);
        double sum = 0;
        size_t values = (size_t)d->n * 784;
        for (size_t i = 0; i < values; i++) {
            cr_assert(d->x[i] >= 0.0f && d->x[i] <= 1.0f);
            sum += d->x[i];
        }
        cr_assert_gt(sum / (double)values, 0.1, "mean pixel %g", sum / (double)values);
    }
    pgn_dataset_free(&train);
    pgn_dataset_free(&test);
}

/* train_samples and test_samples keep the first N of each set, as the files order them; more
 * than a set has is an error naming the field. */
Test(data, fashion_mnist_subsets_are_the_first_samples) {
    pgn_data_spec all = {.source = PGN_DATA_FASHION_MNIST};
    pgn_data_spec some = {.source = PGN_DATA_FASHION_MNIST, .train_samples = 32, .test_samples = 5};
    pgn_dataset train, test, sub_train, sub_test;
    pgn_error err = {0};
    cr_assert_eq(pgn_dataset_load(&all, tmpdir, &train, &test, &err), 0, "%s", err.message);
    cr_assert_eq(pgn_dataset_load(&some, tmpdir, &sub_train, &sub_test, &err), 0, "%s", err.message);
    cr_assert_eq(sub_train.n, 32);
    cr_assert_eq(sub_test.n, 5);
    cr_assert_eq(sub_train.classes, 10);
    cr_assert_eq(memcmp(sub_train.x, train.x, 32 * 784 * sizeof(float)), 0);
    cr_assert_eq(memcmp(sub_train.y, train.y, 32 * sizeof(int32_t)), 0);
    cr_assert_eq(memcmp(sub_test.x, test.x, 5 * 784 * sizeof(float)), 0);
    cr_assert_eq(memcmp(sub_test.y, test.y, 5 * sizeof(int32_t)), 0);
    pgn_dataset_free(&sub_train);
    pgn_dataset_free(&sub_test);
    pgn_dataset_free(&train);
    pgn_dataset_free(&test);
    pgn_data_spec too_many = {.source = PGN_DATA_FASHION_MNIST, .test_samples = 10001};
    cr_assert_neq(pgn_dataset_load(&too_many, tmpdir, &train, &test, &err), 0);
    cr_assert_str_eq(err.field, "data.test_samples");
    cr_assert(strstr(err.message, "10001 samples asked for, the set has 10000"), "%s", err.message);
}

/* A copy under <data_dir>/fashion-mnist/ wins over the package, and is checked like any other. */
Test(data, fashion_mnist_prefers_the_data_dir) {
    char dir[128];
    snprintf(dir, sizeof dir, "%s/fashion-mnist", tmpdir);
    cr_assert_eq(mkdir(dir, 0700), 0);
    static const unsigned char labels[] = {9, 0};
    blob img = images_blob(2, 28, 28, pixels, 4), lab = labels_blob(2, labels);
    write_blob("fashion-mnist/train-images-idx3-ubyte.gz", &img, true);
    write_blob("fashion-mnist/train-labels-idx1-ubyte.gz", &lab, true);
    write_blob("fashion-mnist/t10k-images-idx3-ubyte.gz", &img, true);
    write_blob("fashion-mnist/t10k-labels-idx1-ubyte.gz", &lab, true);
    pgn_data_spec s = {.source = PGN_DATA_FASHION_MNIST};
    pgn_dataset train, test;
    pgn_error err = {0};
    cr_assert_eq(pgn_dataset_load(&s, tmpdir, &train, &test, &err), 0, "%s", err.message);
    cr_assert_eq(train.n, 2);
    cr_assert_eq(test.n, 2);
    cr_assert_eq(train.y[0], 9);
    cr_assert_eq(train.x[2], 1.0f);
    pgn_dataset_free(&train);
    pgn_dataset_free(&test);

    static const unsigned char bad_labels[] = {3, 10};
    lab = labels_blob(2, bad_labels);
    write_blob("fashion-mnist/t10k-labels-idx1-ubyte.gz", &lab, true);
    err = load_err(&s);
    cr_assert(strstr(err.message, "t10k-labels-idx1-ubyte.gz: label 10 at index 1 is out of "
                                  "range (expected 0..9)"), "%s", err.message);

    img = images_blob(2, 28, 27, pixels, 4);
    write_blob("fashion-mnist/train-images-idx3-ubyte.gz", &img, true);
    err = load_err(&s);
    cr_assert(strstr(err.message, "train-images-idx3-ubyte.gz: images have 756 pixels (expected "
                                  "28x28)"), "%s", err.message);
}

/* pgn_idx_inspect, which paragond's uploads use: what a file declares, read without loading it,
 * plain or gzip'd; errors name the file as the caller calls it, never by its path. */
Test(data, idx_inspect_reports_dims_and_refuses_what_a_job_could_not_read) {
    blob img = images_blob(3, 2, 2, pixels, 4), lab = labels_blob(3, labels3);
    write_blob("i", &img, false);
    write_blob("l.gz", &lab, true);
    char path[256];
    pgn_idx_info info;
    pgn_error err;
    snprintf(path, sizeof path, "%s/i", tmpdir);
    cr_assert_eq(pgn_idx_inspect(path, "images.idx", &info, &err), 0, "%s", err.message);
    cr_assert_eq(info.ndims, 3);
    cr_assert(info.dims[0] == 3 && info.dims[1] == 2 && info.dims[2] == 2 && !info.gzip);
    snprintf(path, sizeof path, "%s/l.gz", tmpdir);
    cr_assert_eq(pgn_idx_inspect(path, "labels.idx.gz", &info, &err), 0, "%s", err.message);
    cr_assert(info.ndims == 1 && info.dims[0] == 3 && info.gzip);

    blob longer = labels_blob(3, labels3);
    put8(&longer, labels3, 2);
    write_blob("long.gz", &longer, true);
    snprintf(path, sizeof path, "%s/long.gz", tmpdir);
    cr_assert_eq(pgn_idx_inspect(path, "long.idx.gz", &info, &err), -1);
    cr_assert_str_eq(err.message, "long.idx.gz: more than 3 bytes of labels after the 8-byte header: the header "
                                  "declares 3");
    cr_assert_eq(err.code, PGN_E_DATA);
    write_file("text", "not idx at all", 14, false);
    snprintf(path, sizeof path, "%s/text", tmpdir);
    cr_assert_eq(pgn_idx_inspect(path, "x.idx", &info, &err), -1);
    cr_assert(strstr(err.message, "x.idx: not an idx file a train job reads") && !strstr(err.message, tmpdir) &&
                  !strstr(err.message, "not idx"),
              "names the file as asked, quotes none of it: %s", err.message);
}
