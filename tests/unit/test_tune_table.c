/*
 * test_tune_table.c — the autotuner's table (runtime/tune_table.c): the
 * text format parsed and written back, every kind of malformed line refused
 * with its line number, put's replace-or-append, find's preference for the
 * exact build, key bucketing, and the table's file: stored 0600 whatever
 * the umask and loaded back, a missing file not an error, and a file or
 * directory that is not the user's own (writable by others, a symbolic
 * link, a FIFO, too large) refused. Every file test uses its own temporary
 * directory.
 */
#include "runtime/runtime.h"
#include "runtime/tune.h"
#include "fs_util.h"
#include "unit.h"

#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define HASH_A "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define HASH_B "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
#define BUILD "3f2a9c"

/* A table with comments, both kinds, both builds, and the extremes of the
 * numbers; no '\n' after the last line. */
static const char sample[] =
    "# tuned on an H200\n"
    "\n"
    "tilec-tune 1\n"
    "best\tNVIDIA H200\t" BUILD "\t" HASH_A "\tmatmul\t1024,-5,0\tBM=128,BN=64,SPLIT=true\t0.25\n"
    "# a comment between entries\n"
    "best\tNVIDIA H200\t*\t" HASH_A "\tmatmul\t1024,-5,0\tBM=64,BN=64,SPLIT=false\t0.5\n"
    "time\tNVIDIA H200\t" BUILD "\t" HASH_A "\tmatmul\t-\t-\t1e-3\n"
    "time\tRTX 4090 (x)\t*\t" HASH_B "\t_k2\t9223372036854775807,-9223372036854775808\tw=-9223372036854775808\t12";

/* ---- helpers ---- */

static tc_status parse(const char *text, RtTuneTable *t, char *why, size_t cap) {
    memset(t, 0, sizeof *t);
    return rt_tune_table_parse(text, strlen(text), t, why, cap);
}

static bool table_is_empty(const RtTuneTable *t) {
    return t->entries == NULL && t->count == 0 && t->cap == 0;
}

static bool entries_equal(const RtTuneEntry *a, const RtTuneEntry *b) {
    if (a->kind != b->kind || strcmp(a->gpu, b->gpu) || strcmp(a->build, b->build) || strcmp(a->hash, b->hash) ||
        strcmp(a->kernel, b->kernel) || a->num_keys != b->num_keys || a->num_fields != b->num_fields || a->ms != b->ms)
        return false;
    for (size_t i = 0; i < a->num_keys; i++)
        if (a->keys[i] != b->keys[i])
            return false;
    for (size_t i = 0; i < a->num_fields; i++)
        if (strcmp(a->fields[i].name, b->fields[i].name) || a->fields[i].value != b->fields[i].value ||
            a->fields[i].is_bool != b->fields[i].is_bool)
            return false;
    return true;
}

static bool tables_equal(const RtTuneTable *a, const RtTuneTable *b) {
    if (a->count != b->count)
        return false;
    for (size_t i = 0; i < a->count; i++)
        if (!entries_equal(&a->entries[i], &b->entries[i]))
            return false;
    return true;
}

/* A valid entry to vary. */
static RtTuneEntry make_entry(RtTuneKind kind, const char *build, int64_t key, int64_t bm, double ms) {
    RtTuneEntry e;
    memset(&e, 0, sizeof e);
    e.kind = kind;
    snprintf(e.gpu, sizeof e.gpu, "NVIDIA H200");
    snprintf(e.build, sizeof e.build, "%s", build);
    snprintf(e.hash, sizeof e.hash, "%s", HASH_A);
    snprintf(e.kernel, sizeof e.kernel, "matmul");
    e.keys[0] = key;
    e.keys[1] = 7;
    e.num_keys = 2;
    snprintf(e.fields[0].name, sizeof e.fields[0].name, "BM");
    e.fields[0].value = bm;
    snprintf(e.fields[1].name, sizeof e.fields[1].name, "SPLIT");
    e.fields[1].value = 1;
    e.fields[1].is_bool = true;
    e.num_fields = 2;
    e.ms = ms;
    return e;
}

static unsigned mode_of(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0 ? (unsigned)(st.st_mode & 07777) : 0xffffu;
}

static int count_files(const char *dir) {
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return n;
}

static void write_text(const char *path, const char *text, mode_t mode) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return;
    if (write(fd, text, strlen(text)) < 0)
        perror(path);
    fchmod(fd, mode);
    close(fd);
}

/* ---- the text format ---- */

TEST(test_tune_parse_fields) {
    RtTuneTable t;
    char why[256];
    CHECK_EQ_INT(parse(sample, &t, why, sizeof why), TC_OK);
    CHECK_EQ_STR(why, "");
    CHECK_EQ_INT(t.count, 4);
    if (t.count != 4)
        return;
    const RtTuneEntry *e = &t.entries[0];
    CHECK_EQ_INT(e->kind, RT_TUNE_BEST);
    CHECK_EQ_STR(e->gpu, "NVIDIA H200");
    CHECK_EQ_STR(e->build, BUILD);
    CHECK_EQ_STR(e->hash, HASH_A);
    CHECK_EQ_STR(e->kernel, "matmul");
    CHECK_EQ_INT(e->num_keys, 3);
    CHECK_EQ_INT(e->keys[0], 1024);
    CHECK_EQ_INT(e->keys[1], -5);
    CHECK_EQ_INT(e->keys[2], 0);
    CHECK_EQ_INT(e->num_fields, 3);
    CHECK_EQ_STR(e->fields[0].name, "BM");
    CHECK_EQ_INT(e->fields[0].value, 128);
    CHECK(!e->fields[0].is_bool);
    CHECK_EQ_STR(e->fields[2].name, "SPLIT");
    CHECK_EQ_INT(e->fields[2].value, 1);
    CHECK(e->fields[2].is_bool);
    CHECK(e->ms == 0.25);
    e = &t.entries[1];
    CHECK_EQ_STR(e->build, "*");
    CHECK(e->fields[2].is_bool && e->fields[2].value == 0);
    e = &t.entries[2];
    CHECK_EQ_INT(e->kind, RT_TUNE_TIME);
    CHECK_EQ_INT(e->num_keys, 0);
    CHECK_EQ_INT(e->num_fields, 0);
    CHECK(e->ms == 1e-3);
    e = &t.entries[3];
    CHECK_EQ_STR(e->gpu, "RTX 4090 (x)");
    CHECK_EQ_STR(e->kernel, "_k2");
    CHECK(e->keys[0] == INT64_MAX && e->keys[1] == INT64_MIN);
    CHECK(e->fields[0].value == INT64_MIN);
    CHECK(e->ms == 12);
    char config[RT_TUNE_MAX_LINE];
    rt_tune_config_text(&t.entries[0], config, sizeof config);
    CHECK_EQ_STR(config, "BM=128,BN=64,SPLIT=true");
    rt_tune_config_text(&t.entries[2], config, sizeof config);
    CHECK_EQ_STR(config, "-");
    rt_tune_config_text(&t.entries[0], config, 6); /* cut, still a string */
    CHECK_EQ_STR(config, "BM=12");
    rt_tune_config_text(&t.entries[0], config, 1);
    CHECK_EQ_STR(config, "");
    rt_tune_table_free(&t);
    CHECK(table_is_empty(&t));

    /* only the first line and comments: an empty table */
    CHECK_EQ_INT(parse("tilec-tune 1", &t, why, sizeof why), TC_OK);
    CHECK_EQ_INT(t.count, 0);
    CHECK_EQ_INT(parse("#x\n\ntilec-tune 1\n\n#\n", &t, NULL, 0), TC_OK);
    CHECK_EQ_INT(t.count, 0);
    rt_tune_table_free(&t);
}

TEST(test_tune_round_trip) {
    RtTuneTable t, u;
    RtBytes out = {0}, again = {0};
    char why[256];
    CHECK_EQ_INT(parse(sample, &t, why, sizeof why), TC_OK);
    CHECK(rt_tune_table_format(&t, &out));
    const char *want = "tilec-tune 1\n"
                       "best\tNVIDIA H200\t" BUILD "\t" HASH_A "\tmatmul\t1024,-5,0\tBM=128,BN=64,SPLIT=true\t0.25\n"
                       "best\tNVIDIA H200\t*\t" HASH_A "\tmatmul\t1024,-5,0\tBM=64,BN=64,SPLIT=false\t0.5\n"
                       "time\tNVIDIA H200\t" BUILD "\t" HASH_A "\tmatmul\t-\t-\t0.001\n"
                       "time\tRTX 4090 (x)\t*\t" HASH_B
                       "\t_k2\t9223372036854775807,-9223372036854775808\tw=-9223372036854775808\t12\n";
    CHECK_EQ_STR((const char *)out.data, want);
    CHECK_EQ_INT(parse((const char *)out.data, &u, why, sizeof why), TC_OK);
    CHECK(tables_equal(&t, &u));
    CHECK(rt_tune_table_format(&u, &again));
    CHECK_EQ_STR((const char *)again.data, (const char *)out.data);
    rt_tune_table_free(&t);
    rt_tune_table_free(&u);
    rt_bytes_free(&out);
    rt_bytes_free(&again);

    /* a time measured as a float, and the extremes of double: every bit comes back */
    static const double times[] = {(double)0.0421760007739067f, 1.0 / 3, 5e-324, 1.7976931348623157e308, 0.1, 1e21};
    CHECK_EQ_INT(parse("tilec-tune 1\n", &t, why, sizeof why), TC_OK);
    for (size_t i = 0; i < sizeof times / sizeof times[0]; i++) {
        RtTuneEntry e = make_entry(RT_TUNE_TIME, BUILD, 1, (int64_t)i, times[i]);
        CHECK_EQ_INT(rt_tune_table_put(&t, &e), TC_OK);
    }
    CHECK(rt_tune_table_format(&t, &out));
    CHECK(strstr((const char *)out.data, "\t0.1\n") != NULL); /* no more digits than it takes */
    CHECK_EQ_INT(parse((const char *)out.data, &u, why, sizeof why), TC_OK);
    CHECK_EQ_STR(why, "");
    CHECK(tables_equal(&t, &u));
    rt_tune_table_free(&t);
    rt_tune_table_free(&u);
    rt_bytes_free(&out);
}

/* A malformed table: refused, with this message, and nothing kept. */
static void expect_error(const char *text, size_t len, const char *want, int line) {
    RtTuneTable t = {0};
    char why[512] = "unchanged";
    tc_status st = rt_tune_table_parse(text, len, &t, why, sizeof why);
    CHECK_EQ_INT(st, TC_ERROR_INVALID_ARGUMENT);
    CHECK(table_is_empty(&t));
    if (strcmp(why, want) != 0)
        fprintf(stderr, "  (from the case at line %d)\n", line);
    CHECK_EQ_STR(why, want);
    CHECK_EQ_STR(tc_last_error(), want);
    rt_tune_table_free(&t);
}

#define BAD(text, want) expect_error(text, sizeof text - 1, want, __LINE__)
#define HEAD "tilec-tune 1\n"
#define ROW(keys, config, ms) "best\tG\t*\t" HASH_A "\tk\t" keys "\t" config "\t" ms "\n"

TEST(test_tune_parse_errors) {
    /* the first line */
    BAD("", "line 1: not a tuning table: no \"tilec-tune 1\" line");
    BAD("# only\n\n", "line 3: not a tuning table: no \"tilec-tune 1\" line");
    BAD("tilec-tune 2\n", "line 1: not a tuning table: expected \"tilec-tune 1\"");
    BAD("# c\ntilec-tune 1 \n", "line 2: not a tuning table: expected \"tilec-tune 1\"");
    BAD(" tilec-tune 1\n", "line 1: not a tuning table: expected \"tilec-tune 1\"");
    BAD(ROW("-", "-", "1") HEAD, "line 1: not a tuning table: expected \"tilec-tune 1\"");
    /* the lines */
    BAD(HEAD "\r\n", "line 2: a carriage return (lines end with \\n alone)");
    BAD("tilec-tune 1\r\n", "line 1: a carriage return (lines end with \\n alone)");
    BAD(HEAD ROW("-", "-", "1\r"), "line 2: a carriage return (lines end with \\n alone)");
    BAD(HEAD "# a \0 in a comment\n", "line 2: a NUL byte");
    BAD(HEAD ROW("-", "-", "1") "best\0", "line 3: a NUL byte");
    BAD(HEAD "  \n", "line 2: 1 tab-separated fields, expected 8 (KIND GPU BUILD HASH KERNEL KEYS CONFIG MS)");
    BAD(HEAD "best\tG\t*\t" HASH_A "\tk\t-\t-\n",
        "line 2: 7 tab-separated fields, expected 8 (KIND GPU BUILD HASH KERNEL KEYS CONFIG MS)");
    BAD(HEAD "best\tG\t*\t" HASH_A "\tk\t-\t-\t1\t\n",
        "line 2: 9 tab-separated fields, expected 8 (KIND GPU BUILD HASH KERNEL KEYS CONFIG MS)");
    /* the columns */
    BAD(HEAD "Best\tG\t*\t" HASH_A "\tk\t-\t-\t1\n", "line 2: KIND: expected best or time");
    BAD(HEAD "best\t\t*\t" HASH_A "\tk\t-\t-\t1\n", "line 2: GPU: expected 1 to 255 printable ASCII characters");
    BAD(HEAD "best\tG\x7f\t*\t" HASH_A "\tk\t-\t-\t1\n", "line 2: GPU: expected 1 to 255 printable ASCII characters");
    BAD(HEAD "best\tG\xc3\xa9\t*\t" HASH_A "\tk\t-\t-\t1\n",
        "line 2: GPU: expected 1 to 255 printable ASCII characters");
    BAD(HEAD "best\tG\t\t" HASH_A "\tk\t-\t-\t1\n", "line 2: BUILD: expected * or 1 to 64 lowercase hex digits");
    BAD(HEAD "best\tG\t3F2A\t" HASH_A "\tk\t-\t-\t1\n", "line 2: BUILD: expected * or 1 to 64 lowercase hex digits");
    BAD(HEAD "best\tG\t**\t" HASH_A "\tk\t-\t-\t1\n", "line 2: BUILD: expected * or 1 to 64 lowercase hex digits");
    BAD(HEAD "best\tG\t" HASH_A "0\t" HASH_A "\tk\t-\t-\t1\n",
        "line 2: BUILD: expected * or 1 to 64 lowercase hex digits");
    BAD(HEAD "best\tG\t*\t" HASH_A "0\tk\t-\t-\t1\n", "line 2: HASH: expected 64 lowercase hex digits");
    BAD(HEAD "best\tG\t*\tg123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\tk\t-\t-\t1\n",
        "line 2: HASH: expected 64 lowercase hex digits");
    BAD(HEAD "best\tG\t*\t0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef\tk\t-\t-\t1\n",
        "line 2: HASH: expected 64 lowercase hex digits");
    BAD(HEAD "best\tG\t*\t" HASH_A "\t2k\t-\t-\t1\n",
        "line 2: KERNEL: expected an identifier of at most 255 characters");
    BAD(HEAD "best\tG\t*\t" HASH_A "\tk-1\t-\t-\t1\n",
        "line 2: KERNEL: expected an identifier of at most 255 characters");
    /* keys */
    BAD(HEAD ROW("1a", "-", "1"), "line 2: KEYS: key 1 is not a decimal integer");
    BAD(HEAD ROW("+1", "-", "1"), "line 2: KEYS: key 1 is not a decimal integer");
    BAD(HEAD ROW("1, 2", "-", "1"), "line 2: KEYS: key 2 is not a decimal integer");
    BAD(HEAD ROW("1,,2", "-", "1"), "line 2: KEYS: key 2 is not a decimal integer");
    BAD(HEAD ROW("1,", "-", "1"), "line 2: KEYS: key 2 is not a decimal integer");
    BAD(HEAD ROW("", "-", "1"), "line 2: KEYS: key 1 is not a decimal integer");
    BAD(HEAD ROW("-", "-", "1") ROW("--", "-", "1"), "line 3: KEYS: key 1 is not a decimal integer");
    BAD(HEAD ROW("0x10", "-", "1"), "line 2: KEYS: key 1 is not a decimal integer");
    BAD(HEAD ROW("9223372036854775808", "-", "1"), "line 2: KEYS: key 1 is out of range (int64)");
    BAD(HEAD ROW("1,-9223372036854775809", "-", "1"), "line 2: KEYS: key 2 is out of range (int64)");
    BAD(HEAD ROW("99999999999999999999x", "-", "1"), "line 2: KEYS: key 1 is not a decimal integer");
    BAD(HEAD ROW("1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17", "-", "1"), "line 2: KEYS: more than 16 keys");
    /* the configuration */
    BAD(HEAD ROW("-", "BM=64,BM=32", "1"), "line 2: CONFIG: BM given twice");
    BAD(HEAD ROW("-", "BM=64,bm=1,BM=true", "1"), "line 2: CONFIG: BM given twice");
    BAD(HEAD ROW("-", "BM", "1"), "line 2: CONFIG: pair 1 is not NAME=VALUE");
    BAD(HEAD ROW("-", "BM=1,", "1"), "line 2: CONFIG: pair 2 is not NAME=VALUE");
    BAD(HEAD ROW("-", "", "1"), "line 2: CONFIG: pair 1 is not NAME=VALUE");
    BAD(HEAD ROW("-", "=1", "1"), "line 2: CONFIG: pair 1: the name is not an identifier of 1 to 63 characters");
    BAD(HEAD ROW("-", "1x=1", "1"), "line 2: CONFIG: pair 1: the name is not an identifier of 1 to 63 characters");
    BAD(HEAD ROW("-", "BM=", "1"), "line 2: CONFIG: BM: the value is not a decimal integer, true or false");
    BAD(HEAD ROW("-", "BM=True", "1"), "line 2: CONFIG: BM: the value is not a decimal integer, true or false");
    BAD(HEAD ROW("-", "BM=1=2", "1"), "line 2: CONFIG: BM: the value is not a decimal integer, true or false");
    BAD(HEAD ROW("-", "BM=99999999999999999999", "1"), "line 2: CONFIG: BM: the value is out of range (int64)");
    BAD(HEAD ROW("-",
                 "a=1,b=2,c=3,d=4,e=5,f=6,g=7,h=8,i=9,j=10,k=11,l=12,m=13,n=14,o=15,p=16,q=17,r=18,s=19,"
                 "t=20,u=21,v=22,w=23,x=24,y=25,z=26,A=27,B=28,C=29,D=30,E=31,F=32,G=33",
                 "1"),
        "line 2: CONFIG: more than 32 pairs");
    /* MS */
    BAD(HEAD ROW("-", "-", "0"), "line 2: MS: not > 0");
    BAD(HEAD ROW("-", "-", "-0"), "line 2: MS: not > 0");
    BAD(HEAD ROW("-", "-", "-1.5"), "line 2: MS: not > 0");
    BAD(HEAD ROW("-", "-", "1e-400"), "line 2: MS: not > 0");
    BAD(HEAD ROW("-", "-", "nan"), "line 2: MS: not a decimal number");
    BAD(HEAD ROW("-", "-", "inf"), "line 2: MS: not a decimal number");
    BAD(HEAD ROW("-", "-", "1e999"), "line 2: MS: not finite");
    BAD(HEAD ROW("-", "-", "0x1p3"), "line 2: MS: not a decimal number");
    BAD(HEAD ROW("-", "-", "1.5x"), "line 2: MS: not a decimal number");
    BAD(HEAD ROW("-", "-", "1.5 "), "line 2: MS: not a decimal number");
    BAD(HEAD ROW("-", "-", " 1.5"), "line 2: MS: not a decimal number");
    BAD(HEAD ROW("-", "-", "1.5e"), "line 2: MS: not a decimal number");
    BAD(HEAD ROW("-", "-", "1-2"), "line 2: MS: not a decimal number");
    BAD(HEAD ROW("-", "-", "."), "line 2: MS: not a decimal number");
    BAD(HEAD ROW("-", "-", ""), "line 2: MS: not a decimal number");

    /* the longest line that may be, and one byte more: a comment, then an entry with a long GPU name */
    size_t cap = 2 * RT_TUNE_MAX_LINE + 256;
    char *text = malloc(cap);
    int n = snprintf(text, cap, HEAD "#%*s\n", RT_TUNE_MAX_LINE - 1, "");
    RtTuneTable t = {0};
    CHECK_EQ_INT(rt_tune_table_parse(text, (size_t)n, &t, NULL, 0), TC_OK);
    rt_tune_table_free(&t);
    n = snprintf(text, cap, HEAD "#%*s\n", RT_TUNE_MAX_LINE, "");
    expect_error(text, (size_t)n, "line 2: longer than 4096 bytes", __LINE__);
    n = snprintf(text, cap, HEAD "#\n#%*s", RT_TUNE_MAX_LINE + 100, ""); /* the last line, without '\n' */
    expect_error(text, (size_t)n, "line 3: longer than 4096 bytes", __LINE__);
    n = snprintf(text, cap, HEAD "best\t%0255d\t*\t" HASH_A "\tk\t-\t-\t1\n", 0);
    CHECK_EQ_INT(rt_tune_table_parse(text, (size_t)n, &t, NULL, 0), TC_OK);
    rt_tune_table_free(&t);
    n = snprintf(text, cap, HEAD "best\t%0256d\t*\t" HASH_A "\tk\t-\t-\t1\n", 0);
    expect_error(text, (size_t)n, "line 2: GPU: expected 1 to 255 printable ASCII characters", __LINE__);
    n = snprintf(text, cap, HEAD "best\tG\t*\t" HASH_A "\tk%0255d\t-\t-\t1\n", 0);
    expect_error(text, (size_t)n, "line 2: KERNEL: expected an identifier of at most 255 characters", __LINE__);
    n = snprintf(text, cap, HEAD ROW("-", "x%063d=1", "1"), 0);
    expect_error(text, (size_t)n, "line 2: CONFIG: pair 1: the name is not an identifier of 1 to 63 characters",
                 __LINE__);
    n = snprintf(text, cap, HEAD ROW("-", "x%062d=1", "1"), 0);
    CHECK_EQ_INT(rt_tune_table_parse(text, (size_t)n, &t, NULL, 0), TC_OK);
    rt_tune_table_free(&t);
    free(text);

    /* why: NULL, or too small (cut and NUL-terminated) */
    CHECK_EQ_INT(rt_tune_table_parse("x", 1, &t, NULL, 0), TC_ERROR_INVALID_ARGUMENT);
    CHECK(table_is_empty(&t));
    char small[8];
    CHECK_EQ_INT(rt_tune_table_parse("x", 1, &t, small, sizeof small), TC_ERROR_INVALID_ARGUMENT);
    CHECK_EQ_STR(small, "line 1:");
    /* the text need not be NUL-terminated: len is what counts */
    CHECK_EQ_INT(
        rt_tune_table_parse(HEAD ROW("-", "-", "1") "garbage", sizeof HEAD ROW("-", "-", "1") - 1, &t, NULL, 0), TC_OK);
    CHECK_EQ_INT(t.count, 1);
    /* a table that is not empty is not parsed into (and not freed) */
    CHECK_EQ_INT(rt_tune_table_parse(HEAD, sizeof HEAD - 1, &t, small, sizeof small), TC_ERROR_INVALID_ARGUMENT);
    CHECK_EQ_INT(t.count, 1);
    rt_tune_table_free(&t);
}

/* ---- put, merge, find ---- */

TEST(test_tune_put_replace_or_append) {
    RtTuneTable t = {0};
    RtTuneEntry a = make_entry(RT_TUNE_BEST, BUILD, 1024, 128, 1.0);
    CHECK_EQ_INT(rt_tune_table_put(&t, &a), TC_OK);
    CHECK_EQ_INT(t.count, 1);
    /* best: the same gpu, build, hash and keys is replaced, whatever the config */
    RtTuneEntry b = make_entry(RT_TUNE_BEST, BUILD, 1024, 64, 0.5);
    CHECK_EQ_INT(rt_tune_table_put(&t, &b), TC_OK);
    CHECK_EQ_INT(t.count, 1);
    CHECK_EQ_INT(t.entries[0].fields[0].value, 64);
    CHECK(t.entries[0].ms == 0.5);
    /* ... and any of those differing is another entry */
    RtTuneEntry c = make_entry(RT_TUNE_BEST, "*", 1024, 32, 0.7);
    CHECK_EQ_INT(rt_tune_table_put(&t, &c), TC_OK);
    c = make_entry(RT_TUNE_BEST, BUILD, 2048, 32, 0.7);
    CHECK_EQ_INT(rt_tune_table_put(&t, &c), TC_OK);
    c.num_keys = 1; /* fewer keys */
    CHECK_EQ_INT(rt_tune_table_put(&t, &c), TC_OK);
    c = make_entry(RT_TUNE_BEST, BUILD, 1024, 32, 0.7);
    snprintf(c.gpu, sizeof c.gpu, "NVIDIA H100");
    CHECK_EQ_INT(rt_tune_table_put(&t, &c), TC_OK);
    c = make_entry(RT_TUNE_BEST, BUILD, 1024, 32, 0.7);
    memcpy(c.hash, HASH_B, 64);
    CHECK_EQ_INT(rt_tune_table_put(&t, &c), TC_OK);
    CHECK_EQ_INT(t.count, 6);

    /* time: one per configuration (its pairs in any order); the best entry is another slot */
    RtTuneEntry t1 = make_entry(RT_TUNE_TIME, BUILD, 1024, 64, 0.9);
    CHECK_EQ_INT(rt_tune_table_put(&t, &t1), TC_OK);
    CHECK_EQ_INT(t.count, 7);
    RtTuneEntry t2 = make_entry(RT_TUNE_TIME, BUILD, 1024, 128, 0.8);
    CHECK_EQ_INT(rt_tune_table_put(&t, &t2), TC_OK);
    CHECK_EQ_INT(t.count, 8);
    RtTuneEntry t3 = t1;
    t3.fields[0] = t1.fields[1];
    t3.fields[1] = t1.fields[0];
    t3.ms = 0.85;
    CHECK_EQ_INT(rt_tune_table_put(&t, &t3), TC_OK);
    CHECK_EQ_INT(t.count, 8);
    CHECK(t.entries[6].ms == 0.85);
    RtTuneEntry t4 = t1; /* SPLIT=1, not SPLIT=true: another configuration */
    t4.fields[1].is_bool = false;
    CHECK_EQ_INT(rt_tune_table_put(&t, &t4), TC_OK);
    CHECK_EQ_INT(t.count, 9);
    /* an entry of the table itself, put again */
    CHECK_EQ_INT(rt_tune_table_put(&t, &t.entries[3]), TC_OK);
    CHECK_EQ_INT(t.count, 9);

    /* entries the format cannot hold are refused, the table unchanged */
    RtTuneEntry bad[8];
    for (int i = 0; i < 8; i++)
        bad[i] = make_entry(RT_TUNE_BEST, BUILD, 1, 1, 1.0);
    bad[0].ms = 0;
    bad[1].ms = NAN;
    bad[2].ms = INFINITY;
    snprintf(bad[3].build, sizeof bad[3].build, "XYZ");
    snprintf(bad[4].gpu, sizeof bad[4].gpu, "a\tb");
    bad[5].num_keys = RT_TUNE_MAX_KEYS + 1;
    snprintf(bad[6].fields[1].name, sizeof bad[6].fields[1].name, "BM");
    bad[7].fields[1].value = 2; /* a boolean */
    for (int i = 0; i < 8; i++) {
        CHECK_EQ_INT(rt_tune_table_put(&t, &bad[i]), TC_ERROR_INVALID_ARGUMENT);
        CHECK(strstr(tc_last_error(), "entry refused") != NULL);
    }
    CHECK_EQ_INT(t.count, 9);

    /* merge: puts each; into itself, nothing changes */
    RtTuneTable m = {0};
    CHECK_EQ_INT(rt_tune_table_merge(&m, &t), TC_OK);
    CHECK(tables_equal(&m, &t));
    CHECK_EQ_INT(rt_tune_table_merge(&m, &t), TC_OK);
    CHECK_EQ_INT(m.count, 9);
    CHECK_EQ_INT(rt_tune_table_merge(&m, &m), TC_OK);
    CHECK_EQ_INT(m.count, 9);
    rt_tune_table_free(&m);
    rt_tune_table_free(&t);

    /* a parsed table may hold one slot twice: the first is found, and a put keeps one */
    char why[256];
    CHECK_EQ_INT(parse(HEAD ROW("1", "-", "1") ROW("2", "-", "2") ROW("1", "-", "3"), &t, why, sizeof why), TC_OK);
    CHECK_EQ_INT(t.count, 3);
    int64_t k1 = 1;
    const RtTuneEntry *f = rt_tune_table_find(&t, "G", BUILD, HASH_A, &k1, 1);
    CHECK(f && f->ms == 1);
    RtTuneEntry d = t.entries[2];
    d.ms = 4;
    CHECK_EQ_INT(rt_tune_table_put(&t, &d), TC_OK);
    CHECK_EQ_INT(t.count, 2);
    CHECK(t.entries[0].ms == 4 && t.entries[1].ms == 2);
    rt_tune_table_free(&t);
}

TEST(test_tune_find) {
    RtTuneTable t = {0};
    RtTuneEntry any = make_entry(RT_TUNE_BEST, "*", 1024, 32, 1.0);
    RtTuneEntry mine = make_entry(RT_TUNE_BEST, BUILD, 1024, 64, 1.0);
    RtTuneEntry other = make_entry(RT_TUNE_BEST, "abc", 1024, 16, 1.0);
    RtTuneEntry timed = make_entry(RT_TUNE_TIME, BUILD, 4096, 8, 1.0);
    CHECK_EQ_INT(rt_tune_table_put(&t, &any), TC_OK);
    CHECK_EQ_INT(rt_tune_table_put(&t, &other), TC_OK);
    CHECK_EQ_INT(rt_tune_table_put(&t, &timed), TC_OK);
    int64_t keys[2] = {1024, 7};
    /* only "*": it */
    const RtTuneEntry *e = rt_tune_table_find(&t, "NVIDIA H200", BUILD, HASH_A, keys, 2);
    CHECK(e && strcmp(e->build, "*") == 0 && e->fields[0].value == 32);
    /* the exact build, wherever it is */
    CHECK_EQ_INT(rt_tune_table_put(&t, &mine), TC_OK);
    e = rt_tune_table_find(&t, "NVIDIA H200", BUILD, HASH_A, keys, 2);
    CHECK(e && strcmp(e->build, BUILD) == 0 && e->fields[0].value == 64);
    e = rt_tune_table_find(&t, "NVIDIA H200", "abc", HASH_A, keys, 2);
    CHECK(e && e->fields[0].value == 16);
    e = rt_tune_table_find(&t, "NVIDIA H200", "ffff", HASH_A, keys, 2);
    CHECK(e && e->fields[0].value == 32);
    e = rt_tune_table_find(&t, "NVIDIA H200", NULL, HASH_A, keys, 2);
    CHECK(e && e->fields[0].value == 32);
    /* keys exactly: the count and every value */
    CHECK(rt_tune_table_find(&t, "NVIDIA H200", BUILD, HASH_A, keys, 1) == NULL);
    int64_t more[3] = {1024, 7, 0};
    CHECK(rt_tune_table_find(&t, "NVIDIA H200", BUILD, HASH_A, more, 3) == NULL);
    int64_t other_keys[2] = {1024, 8};
    CHECK(rt_tune_table_find(&t, "NVIDIA H200", BUILD, HASH_A, other_keys, 2) == NULL);
    /* another gpu or hash; time entries are never found */
    CHECK(rt_tune_table_find(&t, "NVIDIA H100", BUILD, HASH_A, keys, 2) == NULL);
    CHECK(rt_tune_table_find(&t, "NVIDIA H200", BUILD, HASH_B, keys, 2) == NULL);
    int64_t timed_keys[2] = {4096, 7};
    CHECK(rt_tune_table_find(&t, "NVIDIA H200", BUILD, HASH_A, timed_keys, 2) == NULL);
    /* no keys */
    RtTuneEntry none = make_entry(RT_TUNE_BEST, BUILD, 0, 1, 1.0);
    none.num_keys = 0;
    CHECK_EQ_INT(rt_tune_table_put(&t, &none), TC_OK);
    e = rt_tune_table_find(&t, "NVIDIA H200", BUILD, HASH_A, NULL, 0);
    CHECK(e && e->num_keys == 0);
    rt_tune_table_free(&t);
}

TEST(test_tune_bucket) {
    CHECK_EQ_INT(rt_tune_bucket(1), 1);
    CHECK_EQ_INT(rt_tune_bucket(2), 2);
    CHECK_EQ_INT(rt_tune_bucket(3), 4);
    CHECK_EQ_INT(rt_tune_bucket(1000), 1024);
    CHECK_EQ_INT(rt_tune_bucket(1024), 1024);
    CHECK_EQ_INT(rt_tune_bucket(1025), 2048);
    CHECK_EQ_INT(rt_tune_bucket(0), 0);
    CHECK_EQ_INT(rt_tune_bucket(-5), -5);
    CHECK(rt_tune_bucket(INT64_MIN) == INT64_MIN);
    const int64_t p62 = (int64_t)1 << 62;
    CHECK(rt_tune_bucket(p62 - 1) == p62);
    CHECK(rt_tune_bucket(p62) == p62);
    CHECK(rt_tune_bucket(p62 + 1) == p62 + 1); /* 2^63 is not an int64: its own bucket */
    CHECK(rt_tune_bucket(INT64_MAX) == INT64_MAX);
    for (int s = 0; s < 62; s++) {
        int64_t p = (int64_t)1 << s;
        CHECK(rt_tune_bucket(p) == p);
        CHECK(rt_tune_bucket(p + 1) == (p == 1 ? 2 : 2 * p));
    }
}

/* ---- the file ---- */

static const char *table_name = "tune-table";

static tc_status load(const char *dir, RtTuneTable *t, bool *found) {
    memset(t, 0, sizeof *t);
    return rt_tune_table_load_file(dir, table_name, t, found);
}

TEST(test_tune_file_round_trip) {
    static const mode_t masks[] = {0, 077, 0777};
    for (size_t m = 0; m < sizeof masks / sizeof masks[0]; m++) {
        char *dir = make_temp_dir();
        char path[600], why[256];
        snprintf(path, sizeof path, "%s/%s", dir, table_name);
        RtTuneTable t, u;
        bool found = true;
        CHECK_EQ_INT(load(dir, &u, &found), TC_OK); /* no table yet */
        CHECK(!found);
        CHECK(table_is_empty(&u));
        CHECK_EQ_INT(parse(sample, &t, why, sizeof why), TC_OK);
        mode_t old = umask(masks[m]);
        CHECK_EQ_INT(rt_tune_table_store_file(dir, table_name, &t), TC_OK);
        umask(old);
        CHECK_EQ_INT(mode_of(path), 0600);
        CHECK_EQ_INT(count_files(dir), 1); /* no temp file left */
        CHECK_EQ_INT(load(dir, &u, &found), TC_OK);
        CHECK(found);
        CHECK(tables_equal(&t, &u));
        rt_tune_table_free(&u);
        /* stored again over it, changed */
        RtTuneEntry e = make_entry(RT_TUNE_BEST, BUILD, 1, 2, 3.0);
        CHECK_EQ_INT(rt_tune_table_put(&t, &e), TC_OK);
        chmod(path, 0644); /* replaced, not rewritten: the new file is 0600 */
        CHECK_EQ_INT(rt_tune_table_store_file(dir, table_name, &t), TC_OK);
        CHECK_EQ_INT(mode_of(path), 0600);
        CHECK_EQ_INT(load(dir, &u, &found), TC_OK);
        CHECK(found && tables_equal(&t, &u));
        CHECK_EQ_INT(count_files(dir), 1);
        rt_tune_table_free(&u);
        rt_tune_table_free(&t);
        /* an empty table is a file too */
        CHECK_EQ_INT(rt_tune_table_store_file(dir, table_name, &t), TC_OK);
        CHECK_EQ_INT(load(dir, &u, &found), TC_OK);
        CHECK(found && u.count == 0);
        remove_tree(dir);
        free(dir);
    }
    /* names: one file of the directory */
    char *dir = make_temp_dir();
    RtTuneTable t = {0};
    bool found;
    static const char *const bad_names[] = {"", ".", "..", "a/b", "/x"};
    for (size_t i = 0; i < sizeof bad_names / sizeof bad_names[0]; i++) {
        CHECK_EQ_INT(rt_tune_table_store_file(dir, bad_names[i], &t), TC_ERROR_INVALID_ARGUMENT);
        CHECK_EQ_INT(rt_tune_table_load_file(dir, bad_names[i], &t, &found), TC_ERROR_INVALID_ARGUMENT);
    }
    CHECK_EQ_INT(count_files(dir), 0);
    /* a table with an entry the format cannot hold is not written */
    RtTuneEntry e = make_entry(RT_TUNE_BEST, BUILD, 1, 2, 3.0);
    CHECK_EQ_INT(rt_tune_table_put(&t, &e), TC_OK);
    t.entries[0].ms = -1;
    CHECK_EQ_INT(rt_tune_table_store_file(dir, table_name, &t), TC_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(tc_last_error(), "entry 1 is not valid: MS") != NULL);
    RtBytes out = {0};
    CHECK(!rt_tune_table_format(&t, &out));
    rt_bytes_free(&out);
    CHECK_EQ_INT(count_files(dir), 0);
    rt_tune_table_free(&t);
    /* a directory that does not exist holds no table */
    char gone[600];
    snprintf(gone, sizeof gone, "%s/gone", dir);
    CHECK_EQ_INT(load(gone, &t, &found), TC_OK);
    CHECK(!found);
    CHECK_EQ_INT(rt_tune_table_store_file(gone, table_name, &t), TC_ERROR_IO);
    remove_tree(dir);
    free(dir);
}

TEST(test_tune_file_refused) {
    char *dir = make_temp_dir();
    char path[600], target[600], link[600];
    snprintf(path, sizeof path, "%s/%s", dir, table_name);
    snprintf(target, sizeof target, "%s/target", dir);
    RtTuneTable t;
    bool found = true;
    char why[256];

    /* a file others can write (here the group) */
    write_text(path, sample, 0620);
    CHECK_EQ_INT(mode_of(path), 0620);
    CHECK_EQ_INT(load(dir, &t, &found), TC_ERROR_IO);
    CHECK(!found);
    CHECK(table_is_empty(&t));
    CHECK(strstr(tc_last_error(), "refused: writable by group or others (mode 0620)") != NULL);
    CHECK(strstr(tc_last_error(), path) != NULL);
    chmod(path, 0644); /* readable by others is fine */
    CHECK_EQ_INT(load(dir, &t, &found), TC_OK);
    CHECK(found && t.count == 4);
    rt_tune_table_free(&t);

    /* a symbolic link named like the table, to a good table: not followed */
    unlink(path);
    write_text(target, sample, 0600);
    CHECK_EQ_INT(symlink(target, path), 0);
    CHECK_EQ_INT(load(dir, &t, &found), TC_ERROR_IO);
    CHECK(!found && table_is_empty(&t));
    CHECK(strstr(tc_last_error(), "a symbolic link") != NULL);
    /* a store replaces the link itself, not its target */
    CHECK_EQ_INT(parse(HEAD, &t, why, sizeof why), TC_OK);
    CHECK_EQ_INT(rt_tune_table_store_file(dir, table_name, &t), TC_OK);
    rt_tune_table_free(&t);
    CHECK_EQ_INT(mode_of(path), 0600);
    CHECK_EQ_INT(load(dir, &t, &found), TC_OK);
    CHECK(found && t.count == 0);
    struct stat ts;
    CHECK(lstat(target, &ts) == 0 && ts.st_size == (off_t)strlen(sample)); /* the target untouched */
    rt_tune_table_free(&t);
    unlink(path);

    /* a FIFO: neither hangs nor loads */
    CHECK_EQ_INT(mkfifo(path, 0600), 0);
    CHECK_EQ_INT(load(dir, &t, &found), TC_ERROR_IO);
    CHECK(strstr(tc_last_error(), "not a regular file") != NULL);
    unlink(path);

    /* a directory named like the table */
    CHECK_EQ_INT(mkdir(path, 0700), 0);
    CHECK_EQ_INT(load(dir, &t, &found), TC_ERROR_IO);
    rmdir(path);

    /* larger than 64 MiB (sparse): refused before a byte is read */
    write_text(path, "", 0600);
    CHECK_EQ_INT(truncate(path, ((off_t)64 << 20) + 1), 0);
    CHECK_EQ_INT(load(dir, &t, &found), TC_ERROR_IO);
    CHECK(strstr(tc_last_error(), "larger than 64 MiB") != NULL);
    unlink(path);

    /* a file that does not parse: the line and what is wrong */
    write_text(path, HEAD ROW("-", "-", "0"), 0600);
    CHECK_EQ_INT(load(dir, &t, &found), TC_ERROR_IO);
    CHECK(!found && table_is_empty(&t));
    CHECK(strstr(tc_last_error(), "refused: line 2: MS: not > 0") != NULL);
    unlink(path);

    /* the directory writable by its group, or others: neither read nor written */
    write_text(path, sample, 0600);
    static const mode_t dir_modes[] = {0770, 0720, 0707, 01777};
    for (size_t i = 0; i < sizeof dir_modes / sizeof dir_modes[0]; i++) {
        chmod(dir, dir_modes[i]);
        CHECK_EQ_INT(load(dir, &t, &found), TC_ERROR_IO);
        CHECK(!found && table_is_empty(&t));
        CHECK(strstr(tc_last_error(), "writable by group or others") != NULL);
        CHECK_EQ_INT(parse(HEAD, &t, why, sizeof why), TC_OK);
        CHECK_EQ_INT(rt_tune_table_store_file(dir, table_name, &t), TC_ERROR_IO);
        rt_tune_table_free(&t);
    }
    chmod(dir, 0700);
    CHECK_EQ_INT(load(dir, &t, &found), TC_OK);
    CHECK(found && t.count == 4); /* the stores above wrote nothing */
    rt_tune_table_free(&t);
    CHECK_EQ_INT(count_files(dir), 2); /* the table and the link's old target */

    /* the directory itself a symbolic link */
    snprintf(link, sizeof link, "%s-link", dir);
    CHECK_EQ_INT(symlink(dir, link), 0);
    CHECK_EQ_INT(load(link, &t, &found), TC_ERROR_IO);
    CHECK(strstr(tc_last_error(), "a symbolic link") != NULL);
    CHECK_EQ_INT(rt_tune_table_store_file(link, table_name, &t), TC_ERROR_IO);
    unlink(link);
    remove_tree(dir);
    free(dir);
}

UNIT_SUITE(tune_table, test_tune_parse_fields, test_tune_round_trip, test_tune_parse_errors,
           test_tune_put_replace_or_append, test_tune_find, test_tune_bucket, test_tune_file_round_trip,
           test_tune_file_refused)
