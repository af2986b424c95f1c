/* test_corpus.c: text sources for character models: the sorted vocabulary, tokens, the
 * validation split, UTF-8 and byte texts, confinement to the datasets directory, Debian's
 * fortunes, and the vocabulary's encode / JSON round trip. */
#include <criterion/criterion.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tensor/tensor.h"

static char dir[64];

static void make_dir(void) {
    snprintf(dir, sizeof dir, "/tmp/pgn-corpus-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static void remove_dir(void) { nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS); }

TestSuite(corpus, .init = make_dir, .fini = remove_dir);

static void write_text(const char *name, const void *bytes, size_t len) {
    char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(bytes, 1, len, f), len);
    fclose(f);
}

static pgn_data_spec text_spec(const char *path) {
    pgn_data_spec s = {.source = PGN_DATA_TEXT};
    snprintf(s.path, sizeof s.path, "%s", path);
    return s;
}

static pgn_error load_err(const pgn_data_spec *s) {
    pgn_corpus c;
    pgn_error err = {0};
    cr_assert_eq(pgn_corpus_load(s, dir, &c, &err), -1, "loaded");
    return err;
}

Test(corpus, characters_become_tokens_of_a_sorted_vocabulary) {
    const char *text = "hello world, hello text!\n"; /* 25 characters */
    write_text("t.txt", text, strlen(text));
    pgn_data_spec s = text_spec("t.txt");
    pgn_corpus c;
    pgn_error err = {0};
    cr_assert_eq(pgn_corpus_load(&s, dir, &c, &err), 0, "%s", err.message);
    cr_assert(c.vocab.utf8);
    const char *sorted = "\n !,dehlortwx";
    cr_assert_eq(c.vocab.size, (int)strlen(sorted));
    for (int i = 0; i < c.vocab.size; i++) cr_assert_eq(c.vocab.chars[i], (uint32_t)sorted[i]);
    cr_assert_eq(c.n, 25);
    cr_assert_eq(c.n_train, 25 - 25 / PGN_TEXT_VALIDATION_DIVISOR);
    for (int i = 0; i < 25; i++) {
        char out[4];
        cr_assert_eq(pgn_vocab_put(&c.vocab, c.tokens[i], out), 1);
        cr_assert_eq(out[0], text[i], "token %d decodes back", i);
    }
    cr_assert_eq(strlen(c.sha256), 64);
    pgn_corpus_free(&c);
}

Test(corpus, utf8_text_has_code_points_and_bytes_text_has_bytes) {
    const char *utf8 = "caf\xc3\xa9 \xe2\x82\xac\xf0\x9f\x99\x82"; /* café €🙂: 7 characters */
    write_text("u.txt", utf8, strlen(utf8));
    pgn_data_spec s = text_spec("u.txt");
    pgn_corpus c;
    pgn_error err = {0};
    cr_assert_eq(pgn_corpus_load(&s, dir, &c, &err), 0, "%s", err.message);
    cr_assert(c.vocab.utf8);
    cr_assert_eq(c.n, 7);
    cr_assert_eq(c.vocab.chars[c.vocab.size - 1], 0x1f642u);
    char out[4];
    cr_assert_eq(pgn_vocab_put(&c.vocab, c.tokens[6], out), 4);
    cr_assert_eq(memcmp(out, "\xf0\x9f\x99\x82", 4), 0);
    pgn_corpus_free(&c);

    const unsigned char latin1[] = {'c', 'a', 'f', 0xe9, 0xff, 'a'}; /* not UTF-8 */
    write_text("b.txt", latin1, sizeof latin1);
    s = text_spec("b.txt");
    cr_assert_eq(pgn_corpus_load(&s, dir, &c, &err), 0, "%s", err.message);
    cr_assert_not(c.vocab.utf8);
    cr_assert_eq(c.n, 6);
    cr_assert_eq(c.vocab.size, 5);
    cr_assert_eq(c.vocab.chars[4], 0xffu);
    cr_assert_eq(pgn_vocab_put(&c.vocab, c.tokens[3], out), 2, "byte 0xe9 comes out as Latin-1 U+00E9");
    cr_assert_eq(memcmp(out, "\xc3\xa9", 2), 0);
    int32_t tok[4];
    size_t n = 0;
    pgn_error e2 = {0};
    cr_assert_eq(pgn_vocab_encode(&c.vocab, "\xc3\xa9" "a", 3, tok, &n, "prompt", &e2), 0, "%s", e2.message);
    cr_assert_eq(n, 2);
    cr_assert_eq(tok[0], c.tokens[3]);
    pgn_corpus_free(&c);
}

Test(corpus, bad_texts_are_named) {
    write_text("empty.txt", "", 0);
    pgn_data_spec s = text_spec("empty.txt");
    pgn_error err = load_err(&s);
    cr_assert_str_eq(err.field, "data.path");
    cr_assert(strstr(err.message, "empty"), "%s", err.message);

    s = text_spec("missing.txt");
    err = load_err(&s);
    cr_assert_str_eq(err.field, "data.path");
    cr_assert(strstr(err.message, "missing.txt"), "%s", err.message);

    s = text_spec("../etc/passwd");
    err = load_err(&s);
    cr_assert_str_eq(err.field, "data.path");
    cr_assert(strstr(err.message, ".."), "%s", err.message);

    char link[128];
    snprintf(link, sizeof link, "%s/out.txt", dir);
    cr_assert_eq(symlink("/etc/passwd", link), 0);
    s = text_spec("out.txt");
    err = load_err(&s);
    cr_assert(strstr(err.message, "outside the data directory"), "%s", err.message);

    char sub[128];
    snprintf(sub, sizeof sub, "%s/sub", dir);
    cr_assert_eq(mkdir(sub, 0700), 0);
    s = text_spec("sub");
    err = load_err(&s);
    cr_assert(strstr(err.message, "not a regular file"), "%s", err.message);
}

Test(corpus, fortunes_read_the_debian_package) {
    if (access("/usr/share/games/fortunes/fortunes", R_OK))
        cr_skip_test("the Debian package fortunes is not installed (install-deps.sh --test installs it)");
    pgn_data_spec s = {.source = PGN_DATA_FORTUNES};
    pgn_corpus a, b;
    pgn_error err = {0};
    cr_assert_eq(pgn_corpus_load(&s, dir, &a, &err), 0, "%s", err.message);
    cr_assert_gt(a.n, 2000000, "about 2.5 MB of English");
    cr_assert(a.vocab.utf8);
    cr_assert(a.vocab.size > 60 && a.vocab.size < 300, "%d characters", a.vocab.size);
    for (int i = 1; i < a.vocab.size; i++) cr_assert_gt(a.vocab.chars[i], a.vocab.chars[i - 1]);
    cr_assert_eq(pgn_corpus_load(&s, dir, &b, &err), 0, "%s", err.message);
    cr_assert_str_eq(a.sha256, b.sha256, "the same text every time");
    cr_assert_eq(memcmp(a.tokens, b.tokens, (size_t)a.n * sizeof *a.tokens), 0);
    pgn_corpus_free(&a);
    pgn_corpus_free(&b);
}

Test(corpus, vocabulary_encodes_prompts_and_round_trips_through_json) {
    const char *text = "abcabc xyz";
    write_text("v.txt", text, strlen(text));
    pgn_data_spec s = text_spec("v.txt");
    pgn_corpus c;
    pgn_error err = {0};
    cr_assert_eq(pgn_corpus_load(&s, dir, &c, &err), 0, "%s", err.message);
    int32_t tok[16];
    size_t n = 0;
    cr_assert_eq(pgn_vocab_encode(&c.vocab, "cab z", 5, tok, &n, "prompt", &err), 0, "%s", err.message);
    cr_assert_eq(n, 5);
    cr_assert_eq(tok[0], 3); /* ' ' a b c x y z */
    cr_assert_eq(pgn_vocab_encode(&c.vocab, "abq", 3, tok, &n, "prompt", &err), -1);
    cr_assert_str_eq(err.field, "prompt");
    cr_assert(strstr(err.message, "character 2 ('q') is not in the model's vocabulary of 7"), "%s", err.message);

    json_t *j = pgn_vocab_to_json(&c.vocab);
    pgn_vocab back;
    cr_assert_eq(pgn_vocab_from_json(j, &back, "test", &err), 0, "%s", err.message);
    cr_assert(pgn_vocab_equal(&back, &c.vocab));
    pgn_vocab_free(&back);
    json_array_set_new(json_object_get(j, "chars"), 1, json_integer(1)); /* out of order */
    cr_assert_eq(pgn_vocab_from_json(j, &back, "test", &err), -1);
    cr_assert(strstr(err.message, "ascending"), "%s", err.message);
    json_decref(j);
    pgn_corpus_free(&c);
}

/* pgn_text_inspect reads in 1 MiB chunks: a character cut by a chunk's end is whole in the next,
 * and the offset of a bad byte is the file's, past the first chunk too. */
Test(corpus, text_inspect_counts_characters_across_chunks_and_names_bad_offsets) {
    size_t len = (1u << 20) + 7;
    char *text = malloc(len);
    text[0] = 'a'; /* then "é" (2 bytes) throughout: one straddles byte 1 MiB */
    for (size_t i = 1; i + 1 < len; i += 2) text[i] = (char)0xc3, text[i + 1] = (char)0xa9;
    write_text("long.txt", text, len);
    char path[160];
    snprintf(path, sizeof path, "%s/long.txt", dir);
    uint64_t chars;
    pgn_error err;
    cr_assert_eq(pgn_text_inspect(path, "long.txt", &chars, &err), 0, "%s", err.message);
    cr_assert_eq(chars, 1 + (len - 1) / 2);

    text[(1u << 20) + 3] = (char)0xff; /* a lead byte's place, past the first chunk */
    write_text("bad.txt", text, len);
    snprintf(path, sizeof path, "%s/bad.txt", dir);
    cr_assert_eq(pgn_text_inspect(path, "bad.txt", &chars, &err), -1);
    cr_assert(strstr(err.message, "bad.txt: not valid UTF-8: the bytes at offset 1048579"), "%s", err.message);

    write_text("empty.txt", "", 0);
    snprintf(path, sizeof path, "%s/empty.txt", dir);
    cr_assert_eq(pgn_text_inspect(path, "empty.txt", &chars, &err), -1);
    cr_assert(strstr(err.message, "empty"), "%s", err.message);
    free(text);
}
