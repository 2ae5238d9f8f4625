/*
 * test_runtime.c — the runtime's CPU-side parts, on a machine with or
 * without a GPU: SHA-256 against the FIPS 180-4 vectors; the disk cache
 * (round trips, and every kind of bad entry rejected, deleted and rebuilt,
 * no temp files left behind); JIT keys; the JIT's build step with a fake
 * compiler and a fake linker (cached PTX that does not link is rebuilt
 * once), and its memory-only fallback; kernel metadata; the front end's signatures; the no-driver
 * path; tc_launch's argument checks (on a kernel whose "driver" is a stub
 * that records the launch); and the AOT emitter. Every test that touches
 * the disk uses its own temporary TILEC_CACHE_DIR.
 */
#include "driver/aot.h"
#include "driver/driver.h"
#include "runtime/runtime.h"
#include "tilec/aot.h"
#include "tilec/stdlib.h"
#include "fs_util.h"
#include "unit.h"
#include "../gpu/fake_libcuda.h" /* FakeTensorMap, FakeLaunch */

#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- helpers ---- */

/* Files in dir whose name starts with prefix. */
static int count_files(const char *dir, const char *prefix) {
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    closedir(d);
    return n;
}

static bool file_exists(const char *path) {
    return access(path, F_OK) == 0;
}

/* strstr that treats a NULL haystack (a failed build's buffer) as empty. */
static bool has(const void *hay, const char *needle) {
    return hay && strstr((const char *)hay, needle) != NULL;
}

static void hex_of(const void *data, size_t len, char out[65]) {
    uint8_t d[32];
    rt_sha256(data, len, d);
    rt_hex(d, 32, out);
}

/* ---- hash ---- */

TEST(test_sha256_vectors) {
    char hex[65];
    hex_of("", 0, hex);
    CHECK_EQ_STR(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    hex_of("abc", 3, hex);
    CHECK_EQ_STR(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *m448 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    hex_of(m448, strlen(m448), hex);
    CHECK_EQ_STR(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    const char *m896 =
        "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrs"
        "mnopqrstnopqrstu";
    hex_of(m896, strlen(m896), hex);
    CHECK_EQ_STR(hex, "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
    /* a million 'a', fed in uneven pieces */
    char *a = malloc(1000000);
    memset(a, 'a', 1000000);
    RtSha256 h;
    rt_sha256_init(&h);
    size_t off = 0, step = 1;
    while (off < 1000000) {
        size_t n = step < 1000000 - off ? step : 1000000 - off;
        rt_sha256_update(&h, a + off, n);
        off += n;
        step = step * 3 % 977 + 1;
    }
    uint8_t d[32];
    rt_sha256_final(&h, d);
    rt_hex(d, 32, hex);
    CHECK_EQ_STR(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    free(a);
}

TEST(test_sha256_lengths) {
    /* every length around the padding boundaries: streaming == one shot */
    uint8_t buf[200];
    for (int i = 0; i < 200; i++)
        buf[i] = (uint8_t)(i * 7 + 3);
    for (size_t n = 50; n < 140; n++) {
        uint8_t one[32], two[32];
        rt_sha256(buf, n, one);
        RtSha256 h;
        rt_sha256_init(&h);
        rt_sha256_update(&h, buf, n / 3);
        rt_sha256_update(&h, buf + n / 3, n - n / 3);
        rt_sha256_final(&h, two);
        CHECK(memcmp(one, two, 32) == 0);
    }
}

TEST(test_sha256_fields) {
    uint8_t x[32], y[32];
    RtSha256 h;
    rt_sha256_init(&h);
    rt_sha256_field(&h, "s", "ab", 2);
    rt_sha256_field(&h, "s", "c", 1);
    rt_sha256_final(&h, x);
    rt_sha256_init(&h);
    rt_sha256_field(&h, "s", "a", 1);
    rt_sha256_field(&h, "s", "bc", 2);
    rt_sha256_final(&h, y);
    CHECK(memcmp(x, y, 32) != 0);
    rt_sha256_init(&h);
    rt_sha256_field_str(&h, "s", NULL);
    rt_sha256_final(&h, x);
    rt_sha256_init(&h);
    rt_sha256_field_str(&h, "s", "");
    rt_sha256_final(&h, y);
    CHECK(memcmp(x, y, 32) != 0);
}

/* ---- cache ---- */

static const uint8_t *key_of(const char *s) {
    static uint8_t k[4][32];
    static int next;
    uint8_t *out = k[next++ % 4];
    rt_sha256(s, strlen(s), out);
    return out;
}

static char *read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *p = malloc((size_t)n + 4096); /* room for the damage functions to grow it */
    *len = fread(p, 1, (size_t)n, f);
    fclose(f);
    return p;
}

static void write_all(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    fwrite(p, 1, n, f);
    fclose(f);
}

/* Stores a PTX entry, damages it with `damage`, and checks it is rejected
 * with a reason containing `reason`, and deleted. */
static void check_rejected(const char *dir, void (*damage)(char *data, size_t *len, const char *dir),
                           const char *reason) {
    const uint8_t *key = key_of("damaged");
    char path[1024];
    rt_cache_path(dir, key, path, sizeof path);
    CHECK_EQ_INT(rt_cache_store(dir, key, RT_PAYLOAD_PTX, "meta", 4, ".version 8.0\n", 13), TC_OK);
    size_t len;
    char *data = read_all(path, &len);
    damage(data, &len, dir);
    write_all(path, data, len);
    free(data);
    RtCacheEntry e;
    bool hit = true;
    char why[256];
    CHECK_EQ_INT(rt_cache_load(dir, key, RT_PAYLOAD_PTX, &e, &hit, why, sizeof why), TC_OK);
    CHECK(!hit);
    CHECK(strstr(why, reason) != NULL);
    if (!strstr(why, reason))
        fprintf(stderr, "  reason: %s (expected %s)\n", why, reason);
    CHECK(!file_exists(path));
}

static void damage_payload(char *d, size_t *len, const char *dir) {
    d[*len - 2] ^= 1;
}
static void damage_truncate(char *d, size_t *len, const char *dir) {
    *len -= 5;
}
static void damage_short(char *d, size_t *len, const char *dir) {
    *len = 40;
}
static void damage_empty(char *d, size_t *len, const char *dir) {
    *len = 0;
}
static void damage_magic(char *d, size_t *len, const char *dir) {
    memcpy(d, "ELF\x7f\0\0\0", 8);
}
static void damage_format(char *d, size_t *len, const char *dir) {
    d[8] = 2;
}
static void damage_kind(char *d, size_t *len, const char *dir) {
    d[12] = 2;
}
static void damage_key(char *d, size_t *len, const char *dir) {
    d[20] ^= 0x40;
}
static void damage_append(char *d, size_t *len, const char *dir) {
    d[(*len)++] = 'x';
}

/* Another compiler wrote it: the version string differs, the checksum fits. */
static void damage_compiler(char *d, size_t *len, const char *dir) {
    d[RT_CACHE_HEADER_SIZE] ^= 0x20; /* "tilec" -> "Tilec" */
    uint8_t sum[32];
    rt_sha256(d + RT_CACHE_HEADER_SIZE, *len - RT_CACHE_HEADER_SIZE, sum);
    memcpy(d + 48, sum, 32);
}

/* A file that is not ours at all. */
static void damage_foreign(char *d, size_t *len, const char *dir) {
    const char *text = "this is not a cache entry: it is a text file that someone or something left in the cache "
                       "directory, long enough to pass for an entry's header\n";
    *len = strlen(text);
    memcpy(d, text, *len);
}

TEST(test_cache_round_trip) {
    char *dir = make_temp_dir();
    char sub[600];
    snprintf(sub, sizeof sub, "%s/a/b", dir); /* created on demand */
    const uint8_t *key = key_of("round trip");
    RtCacheEntry e;
    bool hit = true;
    char why[256];
    CHECK_EQ_INT(rt_cache_load(sub, key, RT_PAYLOAD_PTX, &e, &hit, why, sizeof why), TC_OK);
    CHECK(!hit);
    CHECK_EQ_STR(why, "");
    const char payload[] = ".version 8.0\n.target sm_90a\n";
    CHECK_EQ_INT(rt_cache_store(sub, key, RT_PAYLOAD_PTX, "\x01\x02", 2, payload, strlen(payload)), TC_OK);
    CHECK_EQ_INT(rt_cache_load(sub, key, RT_PAYLOAD_PTX, &e, &hit, why, sizeof why), TC_OK);
    CHECK(hit);
    CHECK_EQ_INT(e.payload_len, strlen(payload));
    CHECK(memcmp(e.payload, payload, e.payload_len) == 0);
    CHECK_EQ_INT(e.payload[e.payload_len], 0); /* PTX payloads are C strings */
    CHECK_EQ_INT(e.meta_len, 2);
    CHECK_EQ_STR(e.compiler, rt_compiler_id());
    CHECK(strncmp(e.compiler, tc_version(), strlen(tc_version())) == 0);
    rt_cache_entry_free(&e);
    /* overwriting is atomic and leaves no temp file */
    CHECK_EQ_INT(rt_cache_store(sub, key, RT_PAYLOAD_PTX, NULL, 0, "x", 1), TC_OK);
    CHECK_EQ_INT(rt_cache_load(sub, key, RT_PAYLOAD_PTX, &e, &hit, why, sizeof why), TC_OK);
    CHECK(hit && e.payload_len == 1 && e.meta_len == 0);
    rt_cache_entry_free(&e);
    CHECK_EQ_INT(count_files(sub, ".tmp-"), 0);
    CHECK_EQ_INT(count_files(sub, ""), 4); /* ".", "..", the entry, the size estimate ("stats") */
    /* a cubin-kind load of a PTX entry is a miss (and deletes it) */
    CHECK_EQ_INT(rt_cache_load(sub, key, RT_PAYLOAD_CUBIN, &e, &hit, why, sizeof why), TC_OK);
    CHECK(!hit);
    CHECK(strstr(why, "kind") != NULL);
    remove_tree(dir);
    free(dir);
}

TEST(test_cache_rejects_bad_entries) {
    char *dir = make_temp_dir();
    check_rejected(dir, damage_payload, "checksum");
    check_rejected(dir, damage_truncate, "truncated");
    check_rejected(dir, damage_short, "short");
    check_rejected(dir, damage_empty, "short");
    check_rejected(dir, damage_magic, "magic");
    check_rejected(dir, damage_format, "format");
    check_rejected(dir, damage_kind, "kind");
    check_rejected(dir, damage_key, "key");
    check_rejected(dir, damage_append, "lengths");
    check_rejected(dir, damage_compiler, "compiler");
    check_rejected(dir, damage_foreign, "magic");
    CHECK_EQ_INT(count_files(dir, ".tmp-"), 0);
    remove_tree(dir);
    free(dir);
}

TEST(test_cache_io_errors) {
    char *dir = make_temp_dir();
    char file[600], bad[700];
    snprintf(file, sizeof file, "%s/plain-file", dir);
    write_all(file, "x", 1);
    snprintf(bad, sizeof bad, "%s/sub", file); /* a directory under a file: ENOTDIR */
    const uint8_t *key = key_of("io");
    CHECK_EQ_INT(rt_cache_store(bad, key, RT_PAYLOAD_PTX, NULL, 0, "x", 1), TC_ERROR_IO);
    CHECK(strstr(tc_last_error(), file) != NULL);
    RtCacheEntry e;
    bool hit = true;
    char why[64];
    CHECK_EQ_INT(rt_cache_load(bad, key, RT_PAYLOAD_PTX, &e, &hit, why, sizeof why), TC_OK); /* just a miss */
    CHECK(!hit);
    /* a directory where the entry should be: not a regular file, a miss */
    char path[1024];
    rt_cache_path(dir, key, path, sizeof path);
    mkdir(path, 0777);
    CHECK_EQ_INT(rt_cache_load(dir, key, RT_PAYLOAD_PTX, &e, &hit, why, sizeof why), TC_OK);
    CHECK(!hit);
    remove_tree(dir);
    free(dir);
}

TEST(test_cache_dir_from_env) {
    char *old = getenv("TILEC_CACHE_DIR") ? strdup(getenv("TILEC_CACHE_DIR")) : NULL;
    char out[512];
    size_t base = 99;
    setenv("TILEC_CACHE_DIR", "/some/where", 1);
    CHECK_EQ_INT(rt_cache_dir(out, sizeof out, &base), TC_OK);
    CHECK_EQ_STR(out, "/some/where");
    CHECK_EQ_INT(base, 0);
    unsetenv("TILEC_CACHE_DIR");
    char *xdg = getenv("XDG_CACHE_HOME") ? strdup(getenv("XDG_CACHE_HOME")) : NULL;
    setenv("XDG_CACHE_HOME", "/xdg", 1);
    base = 99;
    CHECK_EQ_INT(rt_cache_dir(out, sizeof out, &base), TC_OK);
    CHECK_EQ_STR(out, "/xdg/tilec");
    CHECK_EQ_INT(base, 0);
    unsetenv("XDG_CACHE_HOME");
    if (getenv("HOME")) {
        char want[512];
        snprintf(want, sizeof want, "%s/.cache/tilec", getenv("HOME"));
        CHECK_EQ_INT(rt_cache_dir(out, sizeof out, &base), TC_OK);
        CHECK_EQ_STR(out, want);
        CHECK_EQ_INT(base, strlen(getenv("HOME"))); /* the home directory is never created */
    }
    if (xdg)
        setenv("XDG_CACHE_HOME", xdg, 1);
    if (old)
        setenv("TILEC_CACHE_DIR", old, 1);
    free(xdg);
    free(old);
}

/* ---- metadata ---- */

static const tc_param_desc softmax_params[] = {
    {"out", TC_DTYPE_F16, 1, 0}, {"x", TC_DTYPE_F16, 1, 1}, {"stride", TC_DTYPE_I64, 0, 0}, {"n", TC_DTYPE_I32, 0, 0}};
static const tc_kernel_desc softmax_desc = {"softmax", 4, 1024, 4, softmax_params, 0, NULL, 0};

TEST(test_meta_round_trip) {
    tc_kernel_desc two[2] = {softmax_desc, {"empty", 8, 65536, 0, NULL, 0, NULL, 0}};
    RtMeta m, back;
    CHECK_EQ_INT(rt_meta_copy(two, 2, &m), TC_OK);
    RtBytes b = {0};
    CHECK(rt_meta_encode(&m, &b));
    CHECK(rt_meta_decode(b.data, b.len, &back));
    CHECK_EQ_INT(back.num_kernels, 2);
    const tc_kernel_desc *d = rt_meta_find(&back, "softmax");
    CHECK(d && d->num_warps == 4 && d->shared_bytes == 1024 && d->num_params == 4);
    if (d) {
        CHECK_EQ_STR(d->params[1].name, "x");
        CHECK(d->params[1].is_pointer && d->params[1].is_const && d->params[1].dtype == TC_DTYPE_F16);
        CHECK(!d->params[3].is_pointer && d->params[3].dtype == TC_DTYPE_I32);
    }
    d = rt_meta_find(&back, "empty");
    CHECK(d && d->num_params == 0 && d->shared_bytes == 65536 && d->num_warps == 8);
    CHECK(rt_meta_find(&back, "nope") == NULL);
    /* every truncation and a trailing byte are rejected */
    int accepted = 0;
    for (size_t n = 0; n < b.len; n++) {
        RtMeta bad;
        accepted += rt_meta_decode(b.data, n, &bad);
    }
    CHECK_EQ_INT(accepted, 0);
    rt_bytes_u8(&b, 0);
    RtMeta bad;
    CHECK(!rt_meta_decode(b.data, b.len, &bad));
    /* a bad dtype */
    RtBytes c = {0};
    RtMeta one = {1, (tc_kernel_desc *)&softmax_desc};
    rt_meta_encode(&one, &c);
    c.data[c.len - 3] = 42; /* the last param's dtype */
    CHECK(!rt_meta_decode(c.data, c.len, &bad));
    rt_bytes_free(&b);
    rt_bytes_free(&c);
    rt_meta_free(&m);
    rt_meta_free(&back);
}

/* A kernel with two tensor maps, as the pipeline adds them on sm_90a: A
 * (f16, extents from i32 parameters, its row stride an i64 parameter) and B
 * (bf16, rank 3, a constant extent, an unbounded one and constant strides). */
static const char tmap_ir[] =
    "kernel @k(%a: ptr<f16> {divisibility = 16}, %M: i32, %K: i32, %s: i64 {divisibility = 8}, %b: ptr<bf16>, "
    "%a_tmap: tensormap {tma_base = 0, tma_dim_params = [2, 1], tma_dims = [0, 0], tma_stride_params = [3], "
    "tma_strides = [0], tma_box = [64, 128], tma_swizzle = 128}, "
    "%b_tmap: tensormap {tma_base = 4, tma_dim_params = [-1, 1, -1], tma_dims = [96, 0, 0], tma_stride_params = "
    "[-1, -1], tma_strides = [128, 16384], tma_box = [32, 16, 1], tma_swizzle = 64}) attrs {num_warps = 4} { return }\n";

/* tc_opt's binary of IR text, or NULL with the diagnostics printed. */
static tc_binary *opt_ir(const char *text, tc_status expect, const char *error) {
    tc_compiler *cc = NULL;
    tc_target t = {"sm_90a"};
    CHECK_EQ_INT(tc_compiler_create(&t, &cc), TC_OK);
    tc_source src = {"tmap.tir", text, strlen(text)};
    tc_diagnostics *d = NULL;
    tc_diagnostics_create(&d);
    tc_binary *b = NULL;
    tc_status st = tc_opt(cc, &src, NULL, NULL, &b, d);
    CHECK_EQ_INT(st, expect);
    if (error)
        CHECK(strstr(tc_diagnostics_text(d), error) != NULL);
    if (st != expect)
        fprintf(stderr, "%s\n", tc_diagnostics_text(d));
    tc_diagnostics_destroy(d);
    tc_compiler_destroy(cc);
    return b;
}

TEST(test_tensor_map_metadata) {
    tc_binary *b = opt_ir(tmap_ir, TC_OK, NULL);
    /* the tensormap parameters are not runtime parameters */
    CHECK_EQ_INT(tc_binary_kernel_num_params(b, 0), 5);
    CHECK_EQ_STR(tc_binary_kernel_param_name(b, 0, 4), "b");
    CHECK(tc_binary_kernel_param_name(b, 0, 5) == NULL);
    CHECK_EQ_INT(tc_binary_kernel_num_tensor_maps(b, 0), 2);
    tc_tensor_map_desc m;
    memset(&m, 0x55, sizeof m);
    CHECK_EQ_INT(tc_binary_kernel_tensor_map(b, 0, 0, &m), TC_OK);
    CHECK(m.base == 0 && m.rank == 2 && m.swizzle == 128);
    CHECK(m.dim_param[0] == 2 && m.dim_param[1] == 1 && m.stride_param[1] == 3);
    CHECK(m.box[0] == 64 && m.box[1] == 128);
    CHECK(m.dim_param[2] == -1 && m.dim[2] == 0 && m.box[2] == 0 && m.stride_param[0] == -1); /* unused: cleared */
    CHECK_EQ_INT(tc_binary_kernel_tensor_map(b, 0, 1, &m), TC_OK);
    CHECK(m.base == 4 && m.rank == 3 && m.swizzle == 64);
    CHECK(m.dim_param[0] == -1 && m.dim[0] == 96 && m.dim_param[1] == 1 && m.dim_param[2] == -1 && m.dim[2] == 0);
    CHECK(m.stride_param[1] == -1 && m.stride[1] == 128 && m.stride_param[2] == -1 && m.stride[2] == 16384);
    CHECK(m.box[0] == 32 && m.box[1] == 16 && m.box[2] == 1);
    /* out of range */
    CHECK_EQ_INT(tc_binary_kernel_tensor_map(b, 0, 2, &m), TC_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(tc_last_error(), "tensor map 2 is out of range (kernel k has 2)") != NULL);
    CHECK_EQ_INT(tc_binary_kernel_tensor_map(b, 1, 0, &m), TC_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(tc_last_error(), "kernel 1 is out of range") != NULL);
    CHECK_EQ_INT(tc_binary_kernel_tensor_map(b, 0, 0, NULL), TC_ERROR_INVALID_ARGUMENT);
    CHECK_EQ_INT(tc_binary_kernel_tensor_map(NULL, 0, 0, &m), TC_ERROR_INVALID_ARGUMENT);
    CHECK_EQ_INT(tc_binary_kernel_num_tensor_maps(b, 1), 0);
    CHECK_EQ_INT(tc_binary_kernel_num_tensor_maps(NULL, 0), 0);
    /* the runtime's copy, as the JIT and tc_module_load read it */
    RtMeta meta;
    CHECK_EQ_INT(rt_meta_from_binary(b, &meta), TC_OK);
    const tc_kernel_desc *d = rt_meta_find(&meta, "k");
    CHECK(d && d->num_params == 5 && d->num_tensor_maps == 2);
    if (d && d->num_tensor_maps == 2) {
        CHECK(d->tensor_maps[0].dim_param[0] == 2 && d->tensor_maps[1].stride[2] == 16384);
        char why[160];
        CHECK(rt_tensor_map_check(d, &d->tensor_maps[0], why, sizeof why));
        CHECK(rt_tensor_map_check(d, &d->tensor_maps[1], why, sizeof why));
    }
    rt_meta_free(&meta);
    tc_binary_destroy(b);

    /* maps the runtime cannot build, or a runtime parameter after a map */
    b = opt_ir("kernel @k(%a: ptr<i1>, %a_tmap: tensormap {tma_base = 0, tma_dim_params = [-1], tma_dims = [0], "
               "tma_stride_params = [], tma_strides = [], tma_box = [16], tma_swizzle = 0}) { return }\n",
               TC_ERROR_COMPILE, "parameter 1 (%a_tmap): no tensor map a launch can build: the base pointer's element "
                                 "type i1 has no TMA data type");
    CHECK(b == NULL);
    b = opt_ir("kernel @k(%a: ptr<f32>, %a_tmap: tensormap {tma_base = 0, tma_dim_params = [2], tma_dims = [0], "
               "tma_stride_params = [], tma_strides = [], tma_box = [16], tma_swizzle = 0}, %n: i32) { return }\n",
               TC_ERROR_COMPILE, "parameter 2 (%n) follows a tensormap parameter");
    CHECK(b == NULL);
    /* more maps than tc_launch builds */
    char many[8192];
    int len = snprintf(many, sizeof many, "kernel @k(%%a: ptr<f32>");
    for (int i = 0; i <= TC_MAX_TENSOR_MAPS; i++)
        len += snprintf(many + len, sizeof many - (size_t)len,
                        ", %%t%d: tensormap {tma_base = 0, tma_dim_params = [-1], tma_dims = [0], tma_stride_params = [], "
                        "tma_strides = [], tma_box = [16], tma_swizzle = 0}",
                        i);
    snprintf(many + len, sizeof many - (size_t)len, ") { return }\n");
    b = opt_ir(many, TC_ERROR_COMPILE, "kernel @k: 17 tensormap parameters, more than a launch builds (16)");
    CHECK(b == NULL);
}

/* The metadata of tmap_ir's kernel, by hand. */
static const tc_param_desc tmap_params[] = {{"a", TC_DTYPE_F16, 1, 1},  {"M", TC_DTYPE_I32, 0, 0},
                                            {"K", TC_DTYPE_I32, 0, 0},  {"s", TC_DTYPE_I64, 0, 0},
                                            {"b", TC_DTYPE_BF16, 1, 0}, {"e", TC_DTYPE_I8, 0, 0}};
static const tc_tensor_map_desc tmap_maps[] = {
    {0, 2, {2, 1, -1, -1, -1}, {0}, {-1, 3, -1, -1, -1}, {0}, {64, 128}, 128},
    {4, 3, {-1, 1, -1, -1, -1}, {96, 0, 0}, {-1, -1, -1, -1, -1}, {0, 128, 16384}, {32, 16, 1}, 64}};
static const tc_kernel_desc tmap_desc = {"k", 4, 0, 6, tmap_params, 2, tmap_maps, 0};

/* A stride that is a parameter times a constant (tc_tensor_map_desc.stride
 * as the multiplier): bytes = value x multiplier x element size, checked for
 * 16-byte alignment and the 2^40 limit after the product. */
TEST(test_tensor_map_stride_multiplier) {
    tc_tensor_map_desc map = {4, 3, {-1, 1, -1, -1, -1}, {96, 0, 0}, {-1, -1, 1, -1, -1}, {0, 128, 96}, {32, 16, 1}, 64};
    tc_kernel_desc d = tmap_desc;
    d.tensor_maps = &map;
    d.num_tensor_maps = 1;
    CUdeviceptr a = 0x10000, b = 0x20000;
    int32_t M = 101, K = 64;
    int64_t s = 72;
    int8_t e = 0;
    void *args[] = {&a, &M, &K, &s, &b, &e};
    RtTensorMapArgs out;
    char why[160];
    CHECK(rt_tensor_map_check(&d, &map, why, sizeof why));
    CHECK_EQ_INT(rt_tensor_map_args(&d, 0, args, &out), TC_OK);
    CHECK(out.stride[0] == 256 && out.stride[1] == 101 * 96 * 2); /* 101 alone would not be aligned */
    map.stride[2] = 0; /* 0 stands for 1: the parameter itself */
    M = 104;
    CHECK_EQ_INT(rt_tensor_map_args(&d, 0, args, &out), TC_OK);
    CHECK(out.stride[1] == 208);
    M = 101;
    map.stride[2] = 4; /* 808 bytes */
    CHECK_EQ_INT(rt_tensor_map_args(&d, 0, args, &out), TC_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(tc_last_error(), "the stride of dimension 2, 4 x argument 1 (M) = 101 elements of bf16, is not a "
                                  "multiple of 16 bytes") != NULL);
    M = INT32_MAX;
    map.stride[2] = 1 << 16; /* 2^48 bytes: past what a map addresses, without overflowing */
    CHECK_EQ_INT(rt_tensor_map_args(&d, 0, args, &out), TC_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(tc_last_error(), "is 2^40 bytes or more") != NULL);
}

TEST(test_meta_tensor_maps) {
    RtMeta m, back;
    tc_kernel_desc two[2] = {softmax_desc, tmap_desc};
    CHECK_EQ_INT(rt_meta_copy(two, 2, &m), TC_OK);
    RtBytes b = {0};
    CHECK(rt_meta_encode(&m, &b));
    CHECK(rt_meta_decode(b.data, b.len, &back));
    const tc_kernel_desc *d = rt_meta_find(&back, "k");
    CHECK(d && d->num_params == 6 && d->num_tensor_maps == 2);
    if (d && d->num_tensor_maps == 2)
        CHECK(memcmp(d->tensor_maps, m.kernels[1].tensor_maps, 2 * sizeof *d->tensor_maps) == 0);
    d = rt_meta_find(&back, "softmax");
    CHECK(d && d->num_tensor_maps == 0 && d->tensor_maps == NULL);
    /* every truncation is rejected */
    int accepted = 0;
    for (size_t n = 0; n < b.len; n++) {
        RtMeta bad;
        accepted += rt_meta_decode(b.data, n, &bad);
    }
    CHECK_EQ_INT(accepted, 0);
    rt_bytes_free(&b);
    rt_meta_free(&back);

    /* each spoiled field of a map is refused by the decoder (and by
     * rt_tensor_map_check, which tc_module_load_ptx applies to a caller's) */
    static const struct {
        const char *what;
        int field, value;
    } spoil[] = {{"rank 0", 0, 0},          {"rank 6", 0, 6},           {"base -1", 1, -1},
                 {"base 6", 1, 6},          {"base an integer", 1, 1},  {"dim_param a pointer", 2, 4},
                 {"dim_param 6", 2, 6},     {"dim -1", 3, -1},          {"stride_param -2", 4, -2},
                 {"stride -16", 5, -16},    {"box 0", 6, 0},            {"box 257", 6, 257},
                 {"box[0] 8 bytes", 7, 4},  {"box[0] over the swizzle", 7, 128}, {"swizzle 16", 8, 16}};
    for (size_t i = 0; i < sizeof spoil / sizeof spoil[0]; i++) {
        tc_tensor_map_desc maps[2] = {tmap_maps[0], tmap_maps[1]};
        tc_tensor_map_desc *t = &maps[1];
        switch (spoil[i].field) {
        case 0: t->rank = spoil[i].value; break;
        case 1: t->base = spoil[i].value; break;
        case 2: t->dim_param[2] = spoil[i].value; break;
        case 3: t->dim[0] = spoil[i].value; break;
        case 4: t->stride_param[1] = spoil[i].value; break;
        case 5: t->stride[2] = spoil[i].value; break;
        case 6: t->box[1] = (unsigned)spoil[i].value; break;
        case 7: t->box[0] = (unsigned)spoil[i].value; break;
        case 8: t->swizzle = spoil[i].value; break;
        }
        tc_kernel_desc kd = tmap_desc;
        kd.tensor_maps = maps;
        char why[160] = "";
        bool ok = rt_tensor_map_check(&kd, t, why, sizeof why);
        if (ok)
            fprintf(stderr, "  accepted: %s\n", spoil[i].what);
        CHECK(!ok && why[0]);
        RtMeta one = {1, &kd}, bad;
        RtBytes c = {0};
        if (spoil[i].field != 0) { /* the encoder writes rank entries: a bad rank is not encoded */
            CHECK(rt_meta_encode(&one, &c));
            CHECK(!rt_meta_decode(c.data, c.len, &bad));
        }
        rt_bytes_free(&c);
    }
    /* an i8 extent, i16 stride parameters are fine; an i1 or f32 one is not */
    tc_param_desc params[6];
    memcpy(params, tmap_params, sizeof params);
    tc_kernel_desc kd = tmap_desc;
    kd.params = params;
    tc_tensor_map_desc t = tmap_maps[0];
    char why[160];
    t.dim_param[1] = 5;
    CHECK(rt_tensor_map_check(&kd, &t, why, sizeof why));
    params[5].dtype = TC_DTYPE_I1;
    CHECK(!rt_tensor_map_check(&kd, &t, why, sizeof why));
    CHECK(strstr(why, "dim_param[1] is 5: neither -1 nor an integer parameter") != NULL);
    params[5].dtype = TC_DTYPE_F32;
    CHECK(!rt_tensor_map_check(&kd, &t, why, sizeof why));
    rt_meta_free(&m);
}

/* ---- persistent kernels: metadata ---- */

/* A persistent kernel as the pass persistent leaves it: the launch grid's
 * three parameters after the runtime ones, then a tensor map (tmap_ir's A). */
static const char persistent_ir[] =
    "kernel @empty_persistent(%a: ptr<f16> {divisibility = 16}, %M: i32, %K: i32, %s: i64 {divisibility = 8}, "
    "%grid_x: i32 {launch_grid = 0}, %grid_y: i32 {launch_grid = 1}, %grid_z: i32 {launch_grid = 2}, "
    "%a_tmap: tensormap {tma_base = 0, tma_dim_params = [2, 1], tma_dims = [0, 0], tma_stride_params = [3], "
    "tma_strides = [0], tma_box = [64, 128], tma_swizzle = 128}) attrs {num_warps = 4} { return }\n";

/* tc_opt's binary of `kernel @k(PARAMS) { return }`, expecting st and, on
 * failure, error among the diagnostics. */
static tc_binary *opt_params(const char *params, tc_status st, const char *error) {
    char text[2048];
    snprintf(text, sizeof text, "kernel @k(%s) { return }\n", params);
    return opt_ir(text, st, error);
}

TEST(test_persistent_metadata) {
    tc_binary *b = opt_ir(persistent_ir, TC_OK, NULL);
    CHECK_EQ_INT(tc_binary_kernel_persistent(b, 0), 1);
    /* the grid is not the caller's: neither a runtime parameter nor a map */
    CHECK_EQ_INT(tc_binary_kernel_num_params(b, 0), 4);
    CHECK_EQ_STR(tc_binary_kernel_param_name(b, 0, 3), "s");
    CHECK(tc_binary_kernel_param_name(b, 0, 4) == NULL);
    CHECK_EQ_INT(tc_binary_kernel_num_tensor_maps(b, 0), 1);
    tc_tensor_map_desc m;
    CHECK_EQ_INT(tc_binary_kernel_tensor_map(b, 0, 0, &m), TC_OK);
    CHECK(m.base == 0 && m.rank == 2 && m.dim_param[0] == 2 && m.dim_param[1] == 1 && m.stride_param[1] == 3);
    CHECK_EQ_INT(tc_binary_kernel_persistent(b, 1), 0);
    CHECK_EQ_INT(tc_binary_kernel_persistent(NULL, 0), 0);
    RtMeta meta;
    CHECK_EQ_INT(rt_meta_from_binary(b, &meta), TC_OK);
    const tc_kernel_desc *d = rt_meta_find(&meta, "empty_persistent");
    CHECK(d && d->persistent == 1 && d->num_params == 4 && d->num_tensor_maps == 1);
    rt_meta_free(&meta);
    tc_binary_destroy(b);
    b = opt_ir(tmap_ir, TC_OK, NULL);
    CHECK_EQ_INT(tc_binary_kernel_persistent(b, 0), 0);
    tc_binary_destroy(b);
    /* a grid and no maps; a grid and no runtime parameters */
    b = opt_params("%n: i32, %x: i32 {launch_grid = 0}, %y: i32 {launch_grid = 1}, %z: i32 {launch_grid = 2}", TC_OK,
                   NULL);
    CHECK(tc_binary_kernel_persistent(b, 0) == 1 && tc_binary_kernel_num_params(b, 0) == 1 &&
          tc_binary_kernel_num_tensor_maps(b, 0) == 0);
    tc_binary_destroy(b);
    b = opt_params("%x: i32 {launch_grid = 0}, %y: i32 {launch_grid = 1}, %z: i32 {launch_grid = 2}", TC_OK, NULL);
    CHECK(tc_binary_kernel_persistent(b, 0) == 1 && tc_binary_kernel_num_params(b, 0) == 0);
    tc_binary_destroy(b);

    /* every other use of launch_grid is refused */
    static const struct {
        const char *params, *error;
    } bad[] = {
        {"%n: i32, %y: i32 {launch_grid = 1}, %x: i32 {launch_grid = 0}, %z: i32 {launch_grid = 2}",
         "kernel @k: parameter 1 (%y): no i32 parameter with launch_grid = 0, the launch grid's extent along x: a "
         "persistent kernel's grid is three i32 parameters with launch_grid = 0, 1, 2 in that order, right after the "
         "runtime parameters"},
        {"%n: i32, %x: i32 {launch_grid = 0}, %y: i32 {launch_grid = 1}",
         "kernel @k: the kernel's 3 parameters: no i32 parameter with launch_grid = 2, the launch grid's extent "
         "along z"},
        {"%x: i32 {launch_grid = 0}, %y: i64 {launch_grid = 1}, %z: i32 {launch_grid = 2}",
         "parameter 1 (%y): no i32 parameter with launch_grid = 1"},
        {"%x: i32 {launch_grid = 0}, %n: i32, %y: i32 {launch_grid = 1}, %z: i32 {launch_grid = 2}",
         "parameter 1 (%n): no i32 parameter with launch_grid = 1"},
        {"%x: i32 {launch_grid = 0}, %y: i32 {launch_grid = 1}, %z: i32 {launch_grid = 2}, %n: i32",
         "parameter 3 (%n) follows the launch grid's parameters: only tensormap parameters may"},
        {"%x: i32 {launch_grid = 0}, %y: i32 {launch_grid = 1}, %z: i32 {launch_grid = 2}, %w: i32 {launch_grid = 3}",
         "parameter 3 (%w) follows the launch grid's parameters"},
        {"%x: i32 {launch_grid = 0}, %y: i32 {launch_grid = 1}, %z: i32 {launch_grid = 2.0}",
         "parameter 2 (%z): no i32 parameter with launch_grid = 2"},
        {"%a: ptr<f32>, %t: tensormap {tma_base = 0, tma_dim_params = [-1], tma_dims = [0], tma_stride_params = [], "
         "tma_strides = [], tma_box = [16], tma_swizzle = 0}, %x: i32 {launch_grid = 0}, %y: i32 {launch_grid = 1}, "
         "%z: i32 {launch_grid = 2}",
         "parameter 2 (%x) follows a tensormap parameter: the tensormap parameters must come after every runtime "
         "parameter and the launch grid"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        b = opt_params(bad[i].params, TC_ERROR_COMPILE, bad[i].error);
        CHECK(b == NULL);
    }
}

/* The metadata of persistent_ir's kernel, by hand: tmap_desc's first four
 * parameters and its map A. */
static const tc_kernel_desc persistent_desc = {"empty_persistent", 4, 0, 4, tmap_params, 1, tmap_maps, 1};

/* tc_opt's PTX of persistent_ir (sm_90a), or NULL. */
static tc_binary *persistent_ptx(void) {
    tc_compiler *cc = NULL;
    tc_target target = {"sm_90a"};
    CHECK_EQ_INT(tc_compiler_create(&target, &cc), TC_OK);
    tc_options opt;
    tc_options_init(&opt);
    opt.emit = TC_EMIT_PTX;
    tc_source src = {"persistent.tir", persistent_ir, strlen(persistent_ir)};
    tc_binary *bin = NULL;
    CHECK_EQ_INT(tc_opt(cc, &src, NULL, &opt, &bin, NULL), TC_OK);
    tc_compiler_destroy(cc);
    return bin;
}

TEST(test_meta_persistent) {
    tc_kernel_desc two[2] = {softmax_desc, persistent_desc};
    RtMeta m, back;
    CHECK_EQ_INT(rt_meta_copy(two, 2, &m), TC_OK);
    CHECK_EQ_INT(m.kernels[1].persistent, 1);
    RtBytes b = {0};
    CHECK(rt_meta_encode(&m, &b));
    CHECK(rt_meta_decode(b.data, b.len, &back));
    const tc_kernel_desc *d = rt_meta_find(&back, "empty_persistent");
    CHECK(d && d->persistent == 1 && d->num_params == 4 && d->num_tensor_maps == 1);
    d = rt_meta_find(&back, "softmax");
    CHECK(d && d->persistent == 0);
    rt_meta_free(&back);
    /* the flag's byte: after the version, the count, the first kernel's name,
     * num_warps and shared_bytes */
    size_t at = 4 + 4 + 4 + strlen(softmax_desc.name) + 4 + 8;
    CHECK_EQ_INT(b.data[at], 0);
    b.data[at] = 1;
    CHECK(rt_meta_decode(b.data, b.len, &back));
    CHECK(back.num_kernels == 2 && back.kernels[0].persistent == 1);
    rt_meta_free(&back);
    for (int v = 2; v < 256; v *= 2) {
        b.data[at] = (uint8_t)v;
        CHECK(!rt_meta_decode(b.data, b.len, &back));
    }
    b.data[at] = 0;
    /* an entry of the version before persistent kernels */
    b.data[0] = 2;
    CHECK(!rt_meta_decode(b.data, b.len, &back));
    rt_bytes_free(&b);
    rt_meta_free(&m);
}

static const char softmax_src[] =
    "kernel softmax(f16* out, const f16* x, i64 stride, i32 n_cols, constexpr i32 BLOCK) {\n"
    "    let row = program_id(0);\n"
    "    let cols = arange(0, BLOCK);\n"
    "    let mask = cols < n_cols;\n"
    "    let v = f32(load(x + row * stride + cols, mask, -inf));\n"
    "    let e = exp(v - max(v, 0));\n"
    "    store(out + row * stride + cols, f16(e / sum(e, 0)), mask);\n"
    "}\n"
    "kernel scale(T* y, const T* x, f32 s, bool flag, i8 small, constexpr dtype T, constexpr i32 N) {\n"
    "    let i = arange(0, N);\n"
    "    store(y + i, load(x + i));\n"
    "}\n";

TEST(test_signature) {
    tc_source src = {"sm.tile", softmax_src, strlen(softmax_src)};
    tc_constexpr cx[] = {{"BLOCK", TC_CONSTEXPR_INT, 1024, 0},
                         {"T", TC_CONSTEXPR_DTYPE, TC_DTYPE_BF16, 0},
                         {"N", TC_CONSTEXPR_INT, 128, 0}};
    RtMeta m;
    CHECK_EQ_INT(rt_signature(&src, "softmax", cx, 1, 4, &m, NULL), TC_OK);
    CHECK_EQ_INT(m.num_kernels, 1);
    if (m.num_kernels == 1) {
        const tc_kernel_desc *d = &m.kernels[0];
        CHECK_EQ_STR(d->name, "softmax");
        CHECK_EQ_INT(d->num_params, 4);
        CHECK_EQ_STR(d->params[0].name, "out");
        CHECK(d->params[0].is_pointer && !d->params[0].is_const && d->params[0].dtype == TC_DTYPE_F16);
        CHECK(d->params[1].is_pointer && d->params[1].is_const);
        CHECK(!d->params[2].is_pointer && d->params[2].dtype == TC_DTYPE_I64);
        CHECK_EQ_STR(d->params[3].name, "n_cols");
    }
    rt_meta_free(&m);
    /* a type parameter decides the pointee type */
    CHECK_EQ_INT(rt_signature(&src, "scale", cx + 1, 2, 8, &m, NULL), TC_OK);
    if (m.num_kernels == 1) {
        const tc_kernel_desc *d = &m.kernels[0];
        CHECK_EQ_INT(d->num_warps, 8);
        CHECK_EQ_INT(d->num_params, 5);
        CHECK(d->params[0].is_pointer && d->params[0].dtype == TC_DTYPE_BF16);
        CHECK(d->params[1].is_const && d->params[1].dtype == TC_DTYPE_BF16);
        CHECK(!d->params[2].is_pointer && d->params[2].dtype == TC_DTYPE_F32);
        CHECK(d->params[3].dtype == TC_DTYPE_I1 && d->params[4].dtype == TC_DTYPE_I8);
        CHECK_EQ_INT(tc_param_size(&d->params[0]), 8);
        CHECK_EQ_INT(tc_param_size(&d->params[4]), 1);
    }
    rt_meta_free(&m);
    /* no such kernel; errors in the source, rendered into diagnostics */
    CHECK_EQ_INT(rt_signature(&src, "nope", cx, 1, 4, &m, NULL), TC_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(tc_last_error(), "nope") != NULL);
    tc_source bad = {"bad.tile", "kernel k(f32* x) { let = ; }", 28};
    tc_diagnostics *diags;
    tc_diagnostics_create(&diags);
    CHECK_EQ_INT(rt_signature(&bad, "k", NULL, 0, 4, &m, diags), TC_ERROR_COMPILE);
    CHECK(strstr(tc_diagnostics_text(diags), "bad.tile:1:") != NULL);
    tc_diagnostics_destroy(diags);
    /* a missing constexpr value is a compile error too */
    CHECK_EQ_INT(rt_signature(&src, "softmax", NULL, 0, 4, &m, NULL), TC_ERROR_COMPILE);
}

/* ---- JIT keys and the build step ---- */

typedef struct FakeCompiler {
    int calls;
    int hook_calls; /* calls that ran the request's specialize hook */
    tc_status result;
} FakeCompiler;

/* "Compiles" by reading the signature, which goes to the request's hook as
 * a real compile's would; the PTX names the kernel, the arch and the number
 * of facts. */
static tc_status fake_compile(void *user, const RtCompileRequest *req, RtBytes *ptx, RtMeta *meta,
                              tc_diagnostics *diags) {
    FakeCompiler *fc = user;
    fc->calls++;
    if (fc->result != TC_OK)
        return fc->result;
    tc_status st = rt_signature(req->source, req->kernel, req->constexprs, req->num_constexprs,
                                req->options->num_warps, meta, diags);
    size_t num_facts = req->num_specs;
    if (st == TC_OK && req->specialize) {
        const tc_param_spec *more = NULL;
        size_t num_more = 0;
        bool stop = false;
        fc->hook_calls++;
        RtMeta sig = *meta; /* the hook's view, freed as a compile's would be */
        memset(meta, 0, sizeof *meta);
        st = req->specialize(req->specialize_user, &sig, &more, &num_more, &stop);
        if (st == TC_OK && !stop)
            *meta = sig;
        else
            rt_meta_free(&sig);
        if (st != TC_OK || stop)
            return st;
        num_facts += num_more;
    }
    char text[256];
    snprintf(text, sizeof text, "// fake PTX for %s on %s, %zu facts\n", req->kernel, req->arch, num_facts);
    rt_bytes_append(ptx, text, strlen(text));
    return st;
}

typedef struct LogLines {
    int count; /* every line but the "loaded" ones, which go to loaded and last_loaded */
    char last[512], last_loaded[512];
    int compiled, rejected, hits, unlinkable, loaded;
} LogLines;

static void log_line(void *user, const char *line) {
    LogLines *l = user;
    if (strstr(line, "tilec: loaded ")) {
        l->loaded++;
        snprintf(l->last_loaded, sizeof l->last_loaded, "%s", line);
        return;
    }
    l->count++;
    snprintf(l->last, sizeof l->last, "%s", line);
    l->compiled += strstr(line, "compiled") != NULL;
    l->rejected += strstr(line, "rejected") != NULL;
    l->hits += strstr(line, "cache hit") != NULL;
    l->unlinkable += strstr(line, "does not link") != NULL;
}

typedef struct JitFixture {
    tc_source src;
    tc_constexpr cx[1];
    tc_options opt;
    uint8_t div16[4];
    FakeCompiler fc;
    LogLines lines;
    RtLogger log;
    RtJitInputs in;
} JitFixture;

static void jit_setup(JitFixture *f, const char *dir) {
    memset(f, 0, sizeof *f);
    f->src = (tc_source){"sm.tile", softmax_src, strlen(softmax_src)};
    f->cx[0] = (tc_constexpr){"BLOCK", TC_CONSTEXPR_INT, 1024, 0};
    tc_options_init(&f->opt);
    f->log = (RtLogger){log_line, &f->lines, NULL};
    f->in = (RtJitInputs){.source = &f->src,
                          .kernel = "softmax",
                          .constexprs = f->cx,
                          .num_constexprs = 1,
                          .options = &f->opt,
                          .arch = "sm_90a",
                          .div16 = f->div16,
                          .num_params = 4,
                          .cache_dir = dir,
                          .compile = fake_compile,
                          .compile_user = &f->fc,
                          .log = &f->log};
}

static void key_of_inputs(const RtJitInputs *in, uint8_t key[32]) {
    uint8_t base[32];
    rt_jit_base_key(in, base);
    rt_jit_ptx_key(base, in->div16, in->num_params, key);
}

TEST(test_jit_keys) {
    JitFixture f;
    jit_setup(&f, NULL);
    uint8_t k0[32], k[32];
    key_of_inputs(&f.in, k0);
    key_of_inputs(&f.in, k);
    CHECK(memcmp(k0, k, 32) == 0); /* deterministic */

    /* each ingredient changes the key */
    f.cx[0].i = 2048;
    key_of_inputs(&f.in, k);
    CHECK(memcmp(k0, k, 32) != 0);
    f.cx[0].i = 1024;
    f.in.arch = "sm_80";
    key_of_inputs(&f.in, k);
    CHECK(memcmp(k0, k, 32) != 0);
    f.in.arch = "sm_90a";
    f.opt.num_warps = 8;
    key_of_inputs(&f.in, k);
    CHECK(memcmp(k0, k, 32) != 0);
    f.opt.num_warps = 4;
    f.div16[1] = 1;
    key_of_inputs(&f.in, k);
    CHECK(memcmp(k0, k, 32) != 0);
    f.div16[1] = 0;
    f.in.kernel = "scale";
    key_of_inputs(&f.in, k);
    CHECK(memcmp(k0, k, 32) != 0);
    f.in.kernel = "softmax";
    tc_source other = {"sm.tile", softmax_src, strlen(softmax_src) - 1};
    f.in.source = &other;
    key_of_inputs(&f.in, k);
    CHECK(memcmp(k0, k, 32) != 0);
    f.in.source = &f.src;
    tc_param_spec spec = {"x", 16};
    f.opt.params = &spec;
    f.opt.num_params = 1;
    key_of_inputs(&f.in, k);
    CHECK(memcmp(k0, k, 32) != 0);
    f.opt.params = NULL;
    f.opt.num_params = 0;
    f.opt.warp_specialize = 1;
    key_of_inputs(&f.in, k);
    CHECK(memcmp(k0, k, 32) != 0);
    f.opt.warp_specialize = 0;
    f.opt.persistent = 1;
    key_of_inputs(&f.in, k);
    CHECK(memcmp(k0, k, 32) != 0);
    f.opt.persistent = 0;
    f.opt.min_programs_per_sm = 2;
    key_of_inputs(&f.in, k);
    CHECK(memcmp(k0, k, 32) != 0);
    f.opt.min_programs_per_sm = 0;
    f.opt.line_info = 1; /* the same code, but the PTX and the cubin carry line info */
    key_of_inputs(&f.in, k);
    CHECK(memcmp(k0, k, 32) != 0);
    f.opt.line_info = 0;

    /* what does not change the code does not change the key */
    f.opt.print_after_all = 1;
    f.opt.verify_each = 1;
    key_of_inputs(&f.in, k);
    CHECK(memcmp(k0, k, 32) == 0);

    /* constexpr order does not matter; a float's bits do */
    tc_constexpr ab[2] = {{"A", TC_CONSTEXPR_INT, 1, 0}, {"B", TC_CONSTEXPR_FLOAT, 0, 0.5}};
    tc_constexpr ba[2] = {ab[1], ab[0]};
    uint8_t kab[32], kba[32];
    f.in.constexprs = ab;
    f.in.num_constexprs = 2;
    key_of_inputs(&f.in, kab);
    f.in.constexprs = ba;
    key_of_inputs(&f.in, kba);
    CHECK(memcmp(kab, kba, 32) == 0);
    ba[0].f = 0.25;
    key_of_inputs(&f.in, kba);
    CHECK(memcmp(kab, kba, 32) != 0);

    /* the cubin key adds the device and the driver */
    uint8_t c1[32], c2[32], c3[32];
    rt_jit_cubin_key(k0, 90, 13000, c1);
    rt_jit_cubin_key(k0, 80, 13000, c2);
    rt_jit_cubin_key(k0, 90, 12080, c3);
    CHECK(memcmp(c1, c2, 32) != 0 && memcmp(c1, c3, 32) != 0 && memcmp(c1, k0, 32) != 0);
}

TEST(test_jit_build_and_cache) {
    char *dir = make_temp_dir();
    JitFixture f;
    jit_setup(&f, dir);
    RtJitBuild b;

    /* cold: compiled, logged, stored */
    CHECK_EQ_INT(rt_jit_build_ptx(&f.in, &b), TC_OK);
    CHECK(b.compiled);
    CHECK_EQ_INT(f.fc.calls, 1);
    CHECK_EQ_INT(f.lines.compiled, 1);
    CHECK(strstr(f.lines.last, "tilec: compiled softmax (key ") != NULL);
    CHECK(has(b.ptx.data, "fake PTX for softmax on sm_90a"));
    CHECK_EQ_INT(b.meta.num_kernels, 1);
    char path[1024];
    rt_cache_path(dir, b.key, path, sizeof path);
    CHECK(file_exists(path));
    rt_jit_build_free(&b);

    /* warm: from the disk, no compile, same PTX and metadata */
    CHECK_EQ_INT(rt_jit_build_ptx(&f.in, &b), TC_OK);
    CHECK(!b.compiled);
    CHECK_EQ_INT(f.fc.calls, 1);
    CHECK_EQ_INT(f.lines.hits, 1);
    CHECK(has(b.ptx.data, "fake PTX for softmax"));
    CHECK(b.meta.num_kernels == 1 && b.meta.kernels[0].num_params == 4 && b.meta.kernels[0].params[1].is_const);
    rt_jit_build_free(&b);

    /* a corrupted entry is rejected, logged, rebuilt and rewritten */
    size_t len;
    char *data = read_all(path, &len);
    data[len - 3] ^= 0x55;
    write_all(path, data, len);
    free(data);
    CHECK_EQ_INT(rt_jit_build_ptx(&f.in, &b), TC_OK);
    CHECK(b.compiled);
    CHECK_EQ_INT(f.fc.calls, 2);
    CHECK_EQ_INT(f.lines.rejected, 1);
    rt_jit_build_free(&b);
    CHECK_EQ_INT(rt_jit_build_ptx(&f.in, &b), TC_OK);
    CHECK(!b.compiled);
    CHECK_EQ_INT(f.fc.calls, 2);
    rt_jit_build_free(&b);

    /* a truncated one too */
    data = read_all(path, &len);
    write_all(path, data, len / 2);
    free(data);
    CHECK_EQ_INT(rt_jit_build_ptx(&f.in, &b), TC_OK);
    CHECK(b.compiled);
    CHECK_EQ_INT(f.fc.calls, 3);
    rt_jit_build_free(&b);

    /* another specialization is another entry */
    f.div16[0] = 1;
    f.in.num_specs = 1;
    CHECK_EQ_INT(rt_jit_build_ptx(&f.in, &b), TC_OK);
    CHECK(b.compiled);
    CHECK_EQ_INT(f.fc.calls, 4);
    CHECK(has(b.ptx.data, "1 facts"));
    rt_jit_build_free(&b);
    CHECK_EQ_INT(count_files(dir, ".tmp-"), 0);
    CHECK_EQ_INT(count_files(dir, ""), 5); /* ".", "..", two entries, "stats" */

    /* a failed compile stores nothing */
    f.fc.result = TC_ERROR_COMPILE;
    f.cx[0].i = 512;
    CHECK_EQ_INT(rt_jit_build_ptx(&f.in, &b), TC_ERROR_COMPILE);
    CHECK_EQ_INT(count_files(dir, ""), 5);

    /* memory only: nothing on disk, every build compiles */
    f.fc.result = TC_OK;
    f.in.cache_dir = NULL;
    CHECK_EQ_INT(rt_jit_build_ptx(&f.in, &b), TC_OK);
    CHECK(b.compiled);
    rt_jit_build_free(&b);
    CHECK_EQ_INT(count_files(dir, ""), 5);

    /* an unwritable cache is not an error: logged, the kernel still builds */
    char file[600], bad[700];
    snprintf(file, sizeof file, "%s/plain-file", dir);
    write_all(file, "x", 1);
    snprintf(bad, sizeof bad, "%s/sub", file);
    f.in.cache_dir = bad;
    int before = f.lines.count;
    CHECK_EQ_INT(rt_jit_build_ptx(&f.in, &b), TC_OK);
    CHECK(b.compiled);
    CHECK(f.lines.count == before + 2 && strstr(f.lines.last, "tilec: cache: cannot create") != NULL);
    rt_jit_build_free(&b);
    remove_tree(dir);
    free(dir);
}

/* A stand-in for the driver's linker: refuses PTX containing `refuse`. */
typedef struct FakeLinker {
    int calls;
    const char *refuse;
} FakeLinker;

static tc_status fake_link(void *user, const char *ptx, size_t len, RtBytes *cubin) {
    FakeLinker *l = user;
    l->calls++;
    if (l->refuse && strstr(ptx, l->refuse))
        return rt_fail(TC_ERROR_CUDA, "cuLinkAddData: CUDA_ERROR_INVALID_PTX (fake)");
    return rt_bytes_append(cubin, "CUBIN:", 6) && rt_bytes_append(cubin, ptx, len)
               ? TC_OK
               : rt_fail(TC_ERROR_OUT_OF_MEMORY, "out of memory");
}

/* Replaces the cached PTX of key with `text`, a valid entry (checksum and all). */
static void plant_ptx(const char *dir, const uint8_t key[32], const char *text) {
    RtCacheEntry e;
    bool hit = false;
    char why[128];
    CHECK_EQ_INT(rt_cache_load(dir, key, RT_PAYLOAD_PTX, &e, &hit, why, sizeof why), TC_OK);
    CHECK(hit);
    if (!hit)
        return;
    CHECK_EQ_INT(rt_cache_store(dir, key, RT_PAYLOAD_PTX, e.meta, e.meta_len, text, strlen(text)), TC_OK);
    rt_cache_entry_free(&e);
}

TEST(test_jit_rebuilds_unlinkable_ptx) {
    char *dir = make_temp_dir();
    JitFixture f;
    jit_setup(&f, dir);
    FakeLinker fl = {0, "broken"};
    RtJitBuild b;
    RtBytes cubin = {0};

    /* cold: compiled, linked once */
    CHECK_EQ_INT(rt_jit_build_cubin(&f.in, fake_link, &fl, &b, &cubin), TC_OK);
    CHECK(b.compiled && f.fc.calls == 1 && fl.calls == 1);
    CHECK(has(cubin.data, "CUBIN:// fake PTX for softmax"));
    uint8_t key[32];
    memcpy(key, b.key, 32);
    rt_jit_build_free(&b);
    rt_bytes_free(&cubin);

    /* cached PTX that passes its checksum but does not link: deleted,
     * compiled afresh, stored, linked; logged once */
    plant_ptx(dir, key, "// broken PTX\n");
    CHECK_EQ_INT(rt_jit_build_cubin(&f.in, fake_link, &fl, &b, &cubin), TC_OK);
    CHECK(b.compiled);
    CHECK_EQ_INT(f.fc.calls, 2);
    CHECK_EQ_INT(fl.calls, 3);
    CHECK(has(cubin.data, "CUBIN:// fake PTX for softmax"));
    CHECK_EQ_INT(f.lines.unlinkable, 1);
    rt_jit_build_free(&b);
    rt_bytes_free(&cubin);
    /* ... so the next build loads the fresh PTX from the disk */
    CHECK_EQ_INT(rt_jit_build_cubin(&f.in, fake_link, &fl, &b, &cubin), TC_OK);
    CHECK(!b.compiled);
    CHECK_EQ_INT(f.fc.calls, 2);
    CHECK(has(cubin.data, "CUBIN:// fake PTX for softmax"));
    rt_jit_build_free(&b);
    rt_bytes_free(&cubin);

    /* fresh PTX that does not link either: one retry, then the error */
    plant_ptx(dir, key, "// broken PTX\n");
    fl.refuse = "PTX";
    fl.calls = 0;
    LogLines before = f.lines;
    CHECK_EQ_INT(rt_jit_build_cubin(&f.in, fake_link, &fl, &b, &cubin), TC_ERROR_CUDA);
    CHECK(strstr(tc_last_error(), "INVALID_PTX") != NULL);
    CHECK_EQ_INT(f.fc.calls, 3);
    CHECK_EQ_INT(fl.calls, 2);
    CHECK_EQ_INT(f.lines.compiled, before.compiled + 1);
    CHECK_EQ_INT(f.lines.unlinkable, 2);
    rt_bytes_free(&cubin);
    /* compiled PTX that does not link is not retried */
    fl.calls = 0;
    f.in.cache_dir = NULL;
    CHECK_EQ_INT(rt_jit_build_cubin(&f.in, fake_link, &fl, &b, &cubin), TC_ERROR_CUDA);
    CHECK_EQ_INT(f.fc.calls, 4);
    CHECK_EQ_INT(fl.calls, 1);
    rt_bytes_free(&cubin);
    remove_tree(dir);
    free(dir);
}

/* A cache directory others can write: tc_jit's choice is memory only, with
 * one warning, and the build still works. */
TEST(test_jit_refused_cache_dir) {
    char *dir = make_temp_dir();
    char *old = getenv("TILEC_CACHE_DIR") ? strdup(getenv("TILEC_CACHE_DIR")) : NULL;
    setenv("TILEC_CACHE_DIR", dir, 1);
    chmod(dir, 0777);
    JitFixture f;
    jit_setup(&f, NULL);
    bool warned = false;
    char path[4096];
    for (int i = 0; i < 3; i++) {
        RtJitBuild b;
        f.in.cache_dir = rt_jit_disk_cache(&f.log, &warned, path, sizeof path) ? path : NULL;
        CHECK(f.in.cache_dir == NULL);
        CHECK_EQ_INT(rt_jit_build_ptx(&f.in, &b), TC_OK);
        CHECK(b.compiled);
        rt_jit_build_free(&b);
    }
    CHECK_EQ_INT(f.fc.calls, 3);
    CHECK_EQ_INT(f.lines.count, 4); /* the warning, then three compiles */
    CHECK_EQ_INT(count_files(dir, ""), 2);
    if (old)
        setenv("TILEC_CACHE_DIR", old, 1);
    else
        unsetenv("TILEC_CACHE_DIR");
    free(old);
    remove_tree(dir);
    free(dir);
}

/* Without a callback, compiles go to stderr only with TILEC_LOG set. */
/* ---- the compile's specialize hook, and front-end runs ---- */

/* Front-end runs since `before`: parses and lowerings, in that order. */
static size_t parses_since(RtFrontendRuns before) {
    return rt_frontend_runs().parses - before.parses;
}

static size_t lowers_since(RtFrontendRuns before) {
    return rt_frontend_runs().lowers - before.lowers;
}

typedef struct HookState {
    int calls;
    size_t num_kernels;
    int x_const, out_const; /* the signature's `const` of softmax's x and out */
    const tc_param_spec *specs;
    size_t num_specs;
    int stop;
    tc_status result;
} HookState;

static tc_status test_hook(void *user, const tc_binary *sig, const tc_param_spec **specs, size_t *num_specs,
                           int *stop) {
    HookState *h = user;
    h->calls++;
    h->num_kernels = tc_binary_kernel_count(sig);
    tc_param_desc d;
    h->out_const = tc_binary_kernel_param(sig, 0, 0, &d) == TC_OK ? d.is_const : -1;
    h->x_const = tc_binary_kernel_param(sig, 0, 1, &d) == TC_OK ? d.is_const : -1;
    if (h->result != TC_OK)
        return rt_fail(h->result, "the test hook refuses");
    *specs = h->specs;
    *num_specs = h->num_specs;
    *stop = h->stop;
    return TC_OK;
}

/* softmax (softmax_src) compiled with the facts in params or from a hook;
 * the binary's text, malloc'd (NULL on failure). */
static char *compile_softmax(tc_emit emit, const tc_param_spec *params, size_t num_params, HookState *hook,
                             tc_status *st) {
    tc_source src = {"sm.tile", softmax_src, strlen(softmax_src)};
    tc_constexpr cx[] = {{"BLOCK", TC_CONSTEXPR_INT, 1024, 0}};
    tc_compiler *cc = NULL;
    tc_compiler_create(NULL, &cc);
    tc_options opt;
    tc_options_init(&opt);
    opt.emit = emit;
    opt.params = params;
    opt.num_params = num_params;
    opt.specialize = hook ? test_hook : NULL;
    opt.specialize_user = hook;
    tc_binary *bin = NULL;
    *st = tc_compile(cc, &src, "softmax", cx, 1, &opt, &bin, NULL);
    tc_compiler_destroy(cc);
    char *text = bin ? strdup(tc_binary_text(bin, NULL)) : NULL;
    tc_binary_destroy(bin);
    return text;
}

TEST(test_compile_specialize_hook) {
    static const tc_param_spec facts[] = {{"out", 16}, {"x", 16}, {"stride", 16}, {"n_cols", 16}};
    tc_status st;
    /* the hook's facts make the same IR and PTX as the same facts in params,
     * after one parse and one lowering */
    for (int e = 0; e < 2; e++) {
        tc_emit emit = e ? TC_EMIT_PTX : TC_EMIT_IR_RAW;
        char *with_params = compile_softmax(emit, facts, 4, NULL, &st);
        CHECK_EQ_INT(st, TC_OK);
        char *without = compile_softmax(emit, NULL, 0, NULL, &st);
        HookState h = {.specs = facts, .num_specs = 4};
        RtFrontendRuns before = rt_frontend_runs();
        char *with_hook = compile_softmax(emit, NULL, 0, &h, &st);
        CHECK_EQ_INT(st, TC_OK);
        CHECK_EQ_INT(parses_since(before), 1);
        CHECK_EQ_INT(lowers_since(before), 1);
        CHECK_EQ_INT(h.calls, 1);
        CHECK(h.num_kernels == 1 && h.x_const == 1 && h.out_const == 0);
        CHECK(with_params && with_hook && strcmp(with_params, with_hook) == 0);
        CHECK(with_params && without && strcmp(with_params, without) != 0); /* the facts matter */
        if (emit == TC_EMIT_IR_RAW)
            CHECK(has(with_hook, "divisibility = 16"));
        free(with_params);
        free(without);
        free(with_hook);
    }

    /* a hook that stops: TC_OK, no text, the signature */
    tc_source src = {"sm.tile", softmax_src, strlen(softmax_src)};
    tc_constexpr cx[] = {{"BLOCK", TC_CONSTEXPR_INT, 1024, 0}};
    tc_compiler *cc;
    CHECK_EQ_INT(tc_compiler_create(NULL, &cc), TC_OK);
    tc_options opt;
    tc_options_init(&opt);
    opt.emit = TC_EMIT_PTX;
    opt.num_warps = 8;
    HookState h = {.stop = 1};
    opt.specialize = test_hook;
    opt.specialize_user = &h;
    tc_binary *bin = NULL;
    RtFrontendRuns before = rt_frontend_runs();
    CHECK_EQ_INT(tc_compile(cc, &src, "softmax", cx, 1, &opt, &bin, NULL), TC_OK);
    CHECK_EQ_INT(parses_since(before), 1);
    size_t len = 99;
    tc_binary_text(bin, &len);
    CHECK_EQ_INT(len, 0);
    CHECK_EQ_INT(tc_binary_kernel_count(bin), 1);
    CHECK_EQ_STR(tc_binary_kernel_name(bin, 0), "softmax");
    CHECK_EQ_INT(tc_binary_kernel_num_warps(bin, 0), 8);
    CHECK_EQ_INT(tc_binary_kernel_shared_bytes(bin, 0), 0);
    CHECK_EQ_INT(tc_binary_kernel_num_params(bin, 0), 4);
    tc_binary_destroy(bin);

    /* TC_EMIT_SIGNATURE does not call the hook; every kernel without a name */
    opt.emit = TC_EMIT_SIGNATURE;
    tc_constexpr all[] = {{"BLOCK", TC_CONSTEXPR_INT, 1024, 0},
                          {"T", TC_CONSTEXPR_DTYPE, TC_DTYPE_BF16, 0},
                          {"N", TC_CONSTEXPR_INT, 128, 0}};
    CHECK_EQ_INT(tc_compile(cc, &src, NULL, all, 3, &opt, &bin, NULL), TC_OK);
    CHECK_EQ_INT(h.calls, 1);
    CHECK_EQ_INT(tc_binary_kernel_count(bin), 2);
    tc_param_desc d;
    CHECK_EQ_INT(tc_binary_kernel_param(bin, 1, 1, &d), TC_OK);
    CHECK(d.is_pointer && d.is_const && d.dtype == TC_DTYPE_BF16 && strcmp(d.name, "x") == 0);
    tc_binary_destroy(bin);
    /* a kernel the file lacks is an argument error there */
    CHECK_EQ_INT(tc_compile(cc, &src, "nope", cx, 1, &opt, &bin, NULL), TC_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(tc_last_error(), "sm.tile has no kernel named 'nope'") != NULL);

    /* a PTX binary keeps `const` */
    opt.emit = TC_EMIT_PTX;
    opt.specialize = NULL;
    CHECK_EQ_INT(tc_compile(cc, &src, "softmax", cx, 1, &opt, &bin, NULL), TC_OK);
    CHECK_EQ_INT(tc_binary_kernel_param(bin, 0, 1, &d), TC_OK);
    CHECK(d.is_const && strcmp(d.name, "x") == 0);
    CHECK_EQ_INT(tc_binary_kernel_param(bin, 0, 0, &d), TC_OK);
    CHECK(!d.is_const);
    tc_binary_destroy(bin);

    /* a hook's error is the compile's, with its message; bad facts are refused */
    opt.specialize = test_hook;
    h = (HookState){.result = TC_ERROR_IO};
    bin = (tc_binary *)&h;
    CHECK_EQ_INT(tc_compile(cc, &src, "softmax", cx, 1, &opt, &bin, NULL), TC_ERROR_IO);
    CHECK(bin == NULL);
    CHECK(strstr(tc_last_error(), "the test hook refuses") != NULL);
    static const tc_param_spec unknown[] = {{"nope", 16}}, odd[] = {{"x", 24}};
    h = (HookState){.specs = unknown, .num_specs = 1};
    CHECK_EQ_INT(tc_compile(cc, &src, "softmax", cx, 1, &opt, &bin, NULL), TC_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(tc_last_error(), "'nope' is not a parameter of kernel softmax") != NULL);
    h = (HookState){.specs = odd, .num_specs = 1};
    CHECK_EQ_INT(tc_compile(cc, &src, "softmax", cx, 1, &opt, &bin, NULL), TC_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(tc_last_error(), "power of two") != NULL);
    tc_compiler_destroy(cc);
}

/* RtJitFactsFn for the tests: facts for softmax's four parameters. */
typedef struct FactsState {
    int calls;
    size_t sig_params;
    uint8_t div16[4];
    tc_param_spec specs[4];
    size_t num_specs;
    bool done;
} FactsState;

static tc_status test_facts(void *user, const RtMeta *sig, RtJitFacts *facts, bool *done) {
    FactsState *s = user;
    s->calls++;
    s->sig_params = sig->num_kernels == 1 ? sig->kernels[0].num_params : 0;
    *facts = (RtJitFacts){s->div16, 4, s->specs, s->num_specs};
    *done = s->done;
    return TC_OK;
}

/* The build step with facts that wait for the compile's signature: one
 * compile either way; the PTX cache is looked up by the facts' key. */
TEST(test_jit_facts_during_compile) {
    char *dir = make_temp_dir();
    JitFixture f;
    jit_setup(&f, dir);
    FactsState fs = {.div16 = {0, 1, 0, 1}, .specs = {{"x", 16}, {"n_cols", 16}}, .num_specs = 2};
    f.in.div16 = NULL;
    f.in.num_params = 0;
    f.in.facts = test_facts;
    f.in.facts_user = &fs;
    RtJitInputs known = f.in;
    known.facts = NULL;
    known.div16 = fs.div16;
    known.num_params = 4;
    uint8_t key[32];
    key_of_inputs(&known, key);

    /* cold: one compile, whose hook gave the facts; stored under their key */
    RtJitBuild b;
    CHECK_EQ_INT(rt_jit_build_ptx(&f.in, &b), TC_OK);
    CHECK(b.compiled && !b.done);
    CHECK(f.fc.calls == 1 && f.fc.hook_calls == 1 && fs.calls == 1 && fs.sig_params == 4);
    CHECK(memcmp(b.key, key, 32) == 0);
    CHECK(has(b.ptx.data, "fake PTX for softmax on sm_90a, 2 facts"));
    CHECK(b.meta.num_kernels == 1 && b.meta.kernels[0].params[1].is_const);
    rt_jit_build_free(&b);
    /* warm: the compile stops after its front end; PTX from the disk */
    CHECK_EQ_INT(rt_jit_build_ptx(&f.in, &b), TC_OK);
    CHECK(!b.compiled && !b.done);
    CHECK(f.fc.calls == 2 && fs.calls == 2);
    CHECK_EQ_INT(f.lines.compiled, 1);
    CHECK(has(b.ptx.data, "2 facts") && b.meta.num_kernels == 1);
    rt_jit_build_free(&b);
    /* the same facts known beforehand find the same entry, with no compile */
    CHECK_EQ_INT(rt_jit_build_ptx(&known, &b), TC_OK);
    CHECK(!b.compiled && f.fc.calls == 2);
    rt_jit_build_free(&b);
    /* done: the facts' owner had the variant; nothing built */
    fs.done = true;
    RtBytes cubin = {0};
    FakeLinker fl = {0, NULL};
    CHECK_EQ_INT(rt_jit_build_cubin(&f.in, fake_link, &fl, &b, &cubin), TC_OK);
    CHECK(b.done && !b.compiled && b.ptx.len == 0 && cubin.len == 0 && fl.calls == 0);
    rt_jit_build_free(&b);
    remove_tree(dir);
    free(dir);
}

/* ---- tc_jit end to end (tests/gpu's fake libcuda, or a GPU) ---- */

static void softmax_args(CUdeviceptr *out, CUdeviceptr *x, int64_t *stride, int32_t *n, void **args, bool aligned) {
    *out = aligned ? 0x10000 : 0x10002;
    *x = 0x20000;
    *stride = aligned ? 1024 : 1000;
    *n = 1000;
    args[0] = out;
    args[1] = x;
    args[2] = stride;
    args[3] = n;
}

/* A request for softmax_src's softmax with the constexpr cx (BLOCK), its
 * source named path. */
static void softmax_request(tc_jit_request *req, const char *path, const tc_constexpr *cx) {
    tc_jit_request_init(req);
    req->source = softmax_src;
    req->path = path;
    req->kernel = "softmax";
    req->constexprs = cx;
    req->num_constexprs = 1;
}

/* A JIT miss parses its source once: family miss with nothing on the disk,
 * family miss with the variant on the disk, family hit with a new variant;
 * and a source with errors, whose diagnostics are rendered once. */
TEST(test_jit_parses_once) {
    tc_context *ctx = NULL, *ctx2 = NULL;
    if (tc_context_create(0, &ctx) != TC_OK) {
        fprintf(stderr, "  runtime: no driver (%s): tc_jit's parse counts not checked\n", tc_last_error());
        return;
    }
    char *dir = make_temp_dir();
    char *old = getenv("TILEC_CACHE_DIR") ? strdup(getenv("TILEC_CACHE_DIR")) : NULL;
    setenv("TILEC_CACHE_DIR", dir, 1);
    LogLines lines = {0};
    CHECK_EQ_INT(tc_context_set_log(ctx, log_line, &lines), TC_OK);
    tc_constexpr cx[] = {{"BLOCK", TC_CONSTEXPR_INT, 1024, 0}};
    tc_jit_request req;
    softmax_request(&req, "sm.tile", cx);
    CUdeviceptr out, x;
    int64_t stride;
    int32_t n;
    void *args[4];
    softmax_args(&out, &x, &stride, &n, args, true);
    req.args = args;
    req.num_args = 4;

    /* family miss, disk miss: one parse, one compile */
    tc_kernel *k1 = NULL, *k2 = NULL, *k3 = NULL;
    RtFrontendRuns before = rt_frontend_runs();
    CHECK_EQ_INT(tc_jit(ctx, &req, &k1), TC_OK);
    CHECK_EQ_INT(parses_since(before), 1);
    CHECK_EQ_INT(lowers_since(before), 1);
    CHECK_EQ_INT(lines.compiled, 1);
    CHECK(k1 && tc_kernel_get_desc(k1) && tc_kernel_get_desc(k1)->params[1].is_const);
    /* in memory: no parse */
    before = rt_frontend_runs();
    CHECK_EQ_INT(tc_jit(ctx, &req, &k2), TC_OK);
    CHECK(k2 == k1);
    CHECK_EQ_INT(parses_since(before), 0);
    /* family hit, variant miss: one parse, one compile */
    softmax_args(&out, &x, &stride, &n, args, false);
    before = rt_frontend_runs();
    CHECK_EQ_INT(tc_jit(ctx, &req, &k3), TC_OK);
    CHECK(k3 && k3 != k1);
    CHECK_EQ_INT(parses_since(before), 1);
    CHECK_EQ_INT(lines.compiled, 2);

    /* another context: family miss, the variant's cubin on the disk: one
     * parse, stopped after the front end, no compile */
    CHECK_EQ_INT(tc_context_create(0, &ctx2), TC_OK);
    LogLines lines2 = {0};
    CHECK_EQ_INT(tc_context_set_log(ctx2, log_line, &lines2), TC_OK);
    softmax_args(&out, &x, &stride, &n, args, true);
    before = rt_frontend_runs();
    CHECK_EQ_INT(tc_jit(ctx2, &req, &k2), TC_OK);
    CHECK(k2 != NULL);
    CHECK_EQ_INT(parses_since(before), 1);
    CHECK_EQ_INT(lowers_since(before), 1);
    CHECK_EQ_INT(lines2.compiled, 0);
    CHECK_EQ_INT(lines2.hits, 1);
    CHECK(has(lines2.last, "cubin"));
    /* each load says what the driver made of the kernel (the fake's figures) */
    CHECK_EQ_INT(lines2.loaded, 1);
    CHECK(has(lines2.last_loaded, "tilec: loaded softmax: 40 registers and 8 bytes of local memory a thread, 0 bytes "
                                  "of static shared memory, 2 programs a multiprocessor"));

    /* errors in the source: one parse, the diagnostics rendered once */
    static const char bad[] = "kernel k(f32* x) { let = ; }";
    tc_jit_request breq;
    tc_jit_request_init(&breq);
    breq.source = bad;
    breq.path = "bad.tile";
    breq.kernel = "k";
    tc_diagnostics *diags;
    tc_diagnostics_create(&diags);
    breq.diags = diags;
    before = rt_frontend_runs();
    CHECK_EQ_INT(tc_jit(ctx2, &breq, &k2), TC_ERROR_COMPILE);
    CHECK_EQ_INT(parses_since(before), 1);
    CHECK_EQ_INT(tc_diagnostics_error_count(diags), 1);
    const char *text = tc_diagnostics_text(diags);
    const char *first = strstr(text, "bad.tile:1:");
    CHECK(first && !strstr(first + 1, "bad.tile:1:"));
    CHECK(strstr(tc_last_error(), "bad.tile:1:") != NULL);
    tc_diagnostics_destroy(diags);
    /* a kernel the source lacks: refused after one parse */
    req.kernel = "nope";
    before = rt_frontend_runs();
    CHECK_EQ_INT(tc_jit(ctx2, &req, &k2), TC_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(tc_last_error(), "no kernel named 'nope'") != NULL);
    CHECK_EQ_INT(parses_since(before), 1);

    CHECK_EQ_INT(tc_context_destroy(ctx2), TC_OK);
    CHECK_EQ_INT(tc_context_destroy(ctx), TC_OK);
    if (old)
        setenv("TILEC_CACHE_DIR", old, 1);
    else
        unsetenv("TILEC_CACHE_DIR");
    free(old);
    remove_tree(dir);
    free(dir);
}

TEST(test_log_env) {
    char *old = getenv("TILEC_LOG") ? strdup(getenv("TILEC_LOG")) : NULL;
    unsetenv("TILEC_LOG");
    RtLogger none = {NULL, NULL, NULL};
    rt_log(&none, 1, "tilec: this line must not appear");
    rt_log(NULL, 1, "tilec: nor this one");
    LogLines l = {0};
    RtLogger cb = {log_line, &l, NULL};
    rt_log(&cb, 2, "tilec: cache hit x");
    CHECK_EQ_INT(l.hits, 1); /* the callback gets every event */
    if (old)
        setenv("TILEC_LOG", old, 1);
    free(old);
}

/* ---- the driver, absent or present ---- */

TEST(test_no_driver) {
    RtCuda cu;
    CHECK_EQ_INT(rt_cuda_open("libtilec-no-such-library.so.1", &cu), TC_ERROR_NO_DRIVER);
    CHECK(strstr(tc_last_error(), "libtilec-no-such-library.so.1 not found: no NVIDIA driver on this machine") != NULL);
    CHECK(cu.handle == NULL && cu.cuLaunchKernel == NULL);
    /* a library that is not libcuda */
    CHECK_EQ_INT(rt_cuda_open("libc.so.6", &cu), TC_ERROR_NO_DRIVER);
    CHECK(strstr(tc_last_error(), "has no cuInit") != NULL);

    /* the real thing: either this machine has a driver, or every entry point says so */
    tc_context *ctx = (tc_context *)1;
    tc_status st = tc_context_create(0, &ctx);
    if (st == TC_ERROR_NO_DRIVER) {
        CHECK(ctx == NULL);
        CHECK(strstr(tc_last_error(), "libcuda.so.1 not found: no NVIDIA driver on this machine") != NULL);
        CHECK_EQ_STR(tc_status_string(st), "no CUDA driver");
        /* the answer is kept, also for other entry points */
        CHECK_EQ_INT(tc_context_create(0, &ctx), TC_ERROR_NO_DRIVER);
        CHECK_EQ_INT(tc_context_create_from(NULL, &ctx), TC_ERROR_NO_DRIVER);
        int v = -1, n = -1;
        CHECK_EQ_INT(tc_driver_version(&v), TC_ERROR_NO_DRIVER);
        CHECK_EQ_INT(tc_device_count(&n), TC_ERROR_NO_DRIVER);
        CHECK(v == 0 && n == 0);
        CHECK(strstr(tc_last_error(), "libcuda.so.1 not found") != NULL);
    } else {
        fprintf(stderr, "  (this machine has a CUDA driver: tc_context_create gave %s)\n", tc_status_string(st));
        CHECK(st == TC_OK || st == TC_ERROR_NO_DEVICE);
        tc_context_destroy(st == TC_OK ? ctx : NULL);
    }
    CHECK_EQ_INT(tc_context_create(0, NULL), TC_ERROR_INVALID_ARGUMENT);
    CHECK_EQ_INT(tc_context_destroy(NULL), TC_OK);
    CHECK_EQ_INT(tc_module_unload(NULL), TC_OK);
    CHECK_EQ_INT(tc_timer_destroy(NULL), TC_OK);
}

TEST(test_null_arguments) {
    tc_kernel *k = (tc_kernel *)1;
    tc_module *m = (tc_module *)1;
    tc_jit_request req;
    tc_jit_request_init(&req);
    req.kernel = "softmax";
    req.source = softmax_src;
    CHECK_EQ_INT(tc_jit(NULL, &req, &k), TC_ERROR_INVALID_ARGUMENT);
    CHECK(k == NULL);
    CHECK_EQ_INT(tc_module_load(NULL, NULL, &m), TC_ERROR_INVALID_ARGUMENT);
    CHECK(m == NULL);
    CHECK_EQ_INT(tc_module_load_ptx(NULL, "x", 1, NULL, 0, &m), TC_ERROR_INVALID_ARGUMENT);
    CHECK_EQ_INT(tc_module_get_kernel(NULL, "x", &k), TC_ERROR_INVALID_ARGUMENT);
    CHECK_EQ_INT(tc_launch(NULL, (tc_dim3){1, 1, 1}, NULL, NULL, 0), TC_ERROR_INVALID_ARGUMENT);
    CHECK_EQ_INT(tc_launch_raw(NULL, (tc_dim3){1, 1, 1}, (tc_dim3){1, 1, 1}, 0, NULL, NULL), TC_ERROR_INVALID_ARGUMENT);
    CHECK_EQ_INT(tc_mem_alloc(NULL, 16, NULL), TC_ERROR_INVALID_ARGUMENT);
    CHECK(tc_kernel_get_desc(NULL) == NULL && tc_kernel_function(NULL) == NULL);
    CHECK(tc_context_cuda(NULL) == NULL && tc_context_compute_capability(NULL) == 0);
    CHECK_EQ_STR(tc_context_arch(NULL), "");
}

TEST(test_arch_for_cc) {
    CHECK_EQ_STR(rt_arch_for_cc(90), "sm_90a");
    CHECK_EQ_STR(rt_arch_for_cc(80), "sm_80");
    CHECK_EQ_STR(rt_arch_for_cc(86), "sm_80");
    CHECK_EQ_STR(rt_arch_for_cc(89), "sm_80");
    CHECK_EQ_STR(rt_arch_for_cc(100), "sm_90");
    CHECK_EQ_STR(rt_arch_for_cc(120), "sm_90");
    CHECK_EQ_STR(rt_arch_for_cc(75), "");
    CHECK(rt_arch_override_check("sm_80", 90) == NULL);
    CHECK(rt_arch_override_check("sm_90", 90) == NULL);
    CHECK(rt_arch_override_check("sm_90a", 90) == NULL);
    CHECK(rt_arch_override_check("sm_90a", 100) != NULL);
    CHECK(rt_arch_override_check("sm_90", 86) != NULL);
    CHECK(rt_arch_override_check("sm_80", 75) != NULL);
    CHECK(rt_arch_override_check("sm_100", 100) != NULL);
    CHECK(rt_arch_override_check("", 90) != NULL);
}

/* ---- tc_launch's checks, with a stub in place of cuLaunchKernel ---- */

static struct {
    int calls;
    unsigned grid[3], block[3], shared;
    void **args;
    RtCuResult result;
    /* kept from params during the call (the array may live on tc_launch's stack) */
    int num_params, first_map;
    void *params[FAKE_MAX_PARAMS];
    FakeTensorMap maps[FAKE_MAX_PARAMS];
} stub;

static RtCuResult stub_launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                              unsigned bz, unsigned shared, CUstream stream, void **params, void **extra) {
    stub.calls++;
    stub.grid[0] = gx, stub.grid[1] = gy, stub.grid[2] = gz;
    stub.block[0] = bx, stub.block[1] = by, stub.block[2] = bz;
    stub.shared = shared;
    stub.args = params;
    for (int i = 0; i < stub.num_params && i < FAKE_MAX_PARAMS; i++) {
        stub.params[i] = params[i];
        if (i >= stub.first_map)
            memcpy(&stub.maps[i], params[i], sizeof stub.maps[i]);
    }
    return stub.result;
}

/* cuTensorMapEncodeTiled's stand-in: its arguments written into the map,
 * as the fake libcuda writes them. */
static struct {
    int calls;
    RtCuResult result;
    uintptr_t map_addr; /* the last map's address */
} enc;

static RtCuResult stub_encode(void *map, int dtype, uint32_t rank, void *address, const uint64_t *dim,
                              const uint64_t *strides, const uint32_t *box, const uint32_t *element_strides,
                              int interleave, int swizzle, int l2_promotion, int oob_fill) {
    enc.calls++;
    enc.map_addr = (uintptr_t)map;
    FakeTensorMap t = fake_tensor_map_of(dtype, rank, address, dim, strides, box, element_strides, interleave, swizzle,
                                         l2_promotion, oob_fill);
    memcpy(map, &t, sizeof t);
    return enc.result;
}

TEST(test_launch_checks) {
    static const uint32_t ptrs[] = {0, 1};
    tc_kernel k = {.fn = NULL,
                   .launch = stub_launch,
                   .num_params = 4,
                   .block = 128,
                   .shared = 1024,
                   .ptr_params = ptrs,
                   .num_ptr_params = 2,
                   .desc = &softmax_desc,
                   .name = "softmax"};
    CUdeviceptr out = 0x10000, x = 0x20000;
    int64_t stride = 1000;
    int32_t n = 1000;
    void *args[] = {&out, &x, &stride, &n};
    memset(&stub, 0, sizeof stub);

    CHECK_EQ_INT(tc_launch(&k, (tc_dim3){37, 2, 1}, NULL, args, 4), TC_OK);
    CHECK_EQ_INT(stub.calls, 1);
    CHECK(stub.grid[0] == 37 && stub.grid[1] == 2 && stub.grid[2] == 1);
    CHECK(stub.block[0] == 128 && stub.block[1] == 1 && stub.block[2] == 1);
    CHECK_EQ_INT(stub.shared, 1024);
    CHECK(stub.args == args);

    /* every bad call is refused before the driver */
    CHECK_EQ_INT(tc_launch(&k, (tc_dim3){1, 1, 1}, NULL, args, 3), TC_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(tc_last_error(), "takes 4 arguments, got 3") != NULL);
    CHECK_EQ_INT(tc_launch(&k, (tc_dim3){1, 1, 1}, NULL, args, 5), TC_ERROR_INVALID_ARGUMENT);
    CHECK_EQ_INT(tc_launch(&k, (tc_dim3){1, 1, 1}, NULL, NULL, 4), TC_ERROR_INVALID_ARGUMENT);
    x = 0;
    CHECK_EQ_INT(tc_launch(&k, (tc_dim3){1, 1, 1}, NULL, args, 4), TC_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(tc_last_error(), "pointer argument 1 (x) is 0") != NULL);
    x = 0x20000;
    args[2] = NULL;
    CHECK_EQ_INT(tc_launch(&k, (tc_dim3){1, 1, 1}, NULL, args, 4), TC_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(tc_last_error(), "args[2] (stride) is NULL") != NULL);
    args[2] = &stride;
    CHECK_EQ_INT(stub.calls, 1);

    /* an empty grid launches nothing */
    CHECK_EQ_INT(tc_launch(&k, (tc_dim3){0, 1, 1}, NULL, args, 4), TC_OK);
    CHECK_EQ_INT(tc_launch(&k, (tc_dim3){5, 1, 0}, NULL, args, 4), TC_OK);
    CHECK_EQ_INT(stub.calls, 1);

    /* a driver error becomes TC_ERROR_CUDA, with the launch described */
    stub.result = 1; /* CUDA_ERROR_INVALID_VALUE */
    CHECK_EQ_INT(tc_launch(&k, (tc_dim3){3, 1, 1}, NULL, args, 4), TC_ERROR_CUDA);
    CHECK(strstr(tc_last_error(), "cuLaunchKernel(softmax, grid 3x1x1, block 128x1x1, shared 1024)") != NULL);
    stub.result = 0;

    /* a kernel without metadata: only tc_launch_raw */
    tc_kernel raw = {.launch = stub_launch, .num_params = SIZE_MAX, .name = "raw"};
    CHECK_EQ_INT(tc_launch(&raw, (tc_dim3){1, 1, 1}, NULL, args, 4), TC_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(tc_last_error(), "without metadata") != NULL);
    int calls = stub.calls;
    CHECK_EQ_INT(tc_launch_raw(&raw, (tc_dim3){2, 1, 1}, (tc_dim3){64, 2, 1}, 77, NULL, args), TC_OK);
    CHECK(stub.calls == calls + 1 && stub.block[0] == 64 && stub.block[1] == 2 && stub.shared == 77);
}

/* ---- tensor maps at launch ---- */

#define TWO_31 ((uint64_t)1 << 31)

/* tmap_desc's kernel with a stub driver: the arguments a, M, K, s, b, e. */
typedef struct TmapLaunch {
    tc_kernel k;
    uint32_t ptrs[2];
    CUdeviceptr a, b;
    int32_t M, K;
    int64_t s;
    int8_t e;
    void *args[6];
} TmapLaunch;

static void tmap_launch_init(TmapLaunch *t, const tc_kernel_desc *d) {
    memset(t, 0, sizeof *t);
    t->ptrs[0] = 0, t->ptrs[1] = 4;
    t->k = (tc_kernel){.launch = stub_launch, .num_params = 6, .block = 128, .ptr_params = t->ptrs,
                       .num_ptr_params = 2, .desc = d, .name = "k", .num_maps = 2, .encode = stub_encode};
    t->a = 0x100000, t->b = 0x200000, t->M = 1000, t->K = 4096, t->s = 4104, t->e = 3;
    void *args[6] = {&t->a, &t->M, &t->K, &t->s, &t->b, &t->e};
    memcpy(t->args, args, sizeof args);
    memset(&stub, 0, sizeof stub);
    memset(&enc, 0, sizeof enc);
    stub.num_params = 8;
    stub.first_map = 6;
}

TEST(test_launch_tensor_maps) {
    TmapLaunch t;
    tmap_launch_init(&t, &tmap_desc);
    CHECK_EQ_INT(tc_launch(&t.k, (tc_dim3){3, 2, 1}, NULL, t.args, 6), TC_OK);
    CHECK_EQ_INT(stub.calls, 1);
    CHECK_EQ_INT(enc.calls, 2);
    CHECK(enc.map_addr % 64 == 0);
    /* the arguments as given, then the maps */
    for (int i = 0; i < 6; i++)
        CHECK(stub.params[i] == t.args[i]);
    const FakeTensorMap *a = &stub.maps[6], *b = &stub.maps[7];
    CHECK(a->magic == FAKE_TMAP_MAGIC && b->magic == FAKE_TMAP_MAGIC);
    /* A: f16 [M, K] rows s apart, a 128x64 box, 128-byte swizzle */
    CHECK_EQ_INT(a->dtype, RT_CU_TENSOR_MAP_DATA_TYPE_FLOAT16);
    CHECK_EQ_INT(a->rank, 2);
    CHECK(a->address == 0x100000);
    CHECK(a->dim[0] == 4096 && a->dim[1] == 1000);
    CHECK_EQ_INT(a->stride[0], 4104 * 2);
    CHECK(a->box[0] == 64 && a->box[1] == 128);
    CHECK_EQ_INT(a->swizzle, RT_CU_TENSOR_MAP_SWIZZLE_128B);
    CHECK(a->interleave == 0 && a->l2_promotion == RT_CU_TENSOR_MAP_L2_PROMOTION_L2_128B && a->oob_fill == 0);
    CHECK(a->element_strides[0] == 1 && a->element_strides[1] == 1);
    /* B: bf16, a constant extent, M, then an unbounded one (2^31); constant strides */
    CHECK_EQ_INT(b->dtype, RT_CU_TENSOR_MAP_DATA_TYPE_BFLOAT16);
    CHECK_EQ_INT(b->rank, 3);
    CHECK(b->address == 0x200000);
    CHECK(b->dim[0] == 96 && b->dim[1] == 1000 && b->dim[2] == TWO_31);
    CHECK(b->stride[0] == 256 && b->stride[1] == 32768);
    CHECK(b->box[0] == 32 && b->box[1] == 16 && b->box[2] == 1);
    CHECK_EQ_INT(b->swizzle, RT_CU_TENSOR_MAP_SWIZZLE_64B);
    CHECK(b->element_strides[0] == 1 && b->element_strides[1] == 1 && b->element_strides[2] == 1);

    /* an extent over 2^31 is clamped (i64 and i8 extents) */
    tc_tensor_map_desc maps[2] = {tmap_maps[0], tmap_maps[1]};
    tc_kernel_desc d = tmap_desc;
    d.tensor_maps = maps;
    maps[0].dim_param[1] = 3; /* s, an i64 */
    maps[1].dim_param[0] = 5; /* e, an i8 */
    tmap_launch_init(&t, &d);
    t.s = ((int64_t)1 << 40) + 16;
    CHECK_EQ_INT(tc_launch(&t.k, (tc_dim3){1, 1, 1}, NULL, t.args, 6), TC_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(tc_last_error(), "2^40 bytes or more") != NULL);
    t.s = (int64_t)TWO_31 * 3;
    t.e = 64;
    CHECK_EQ_INT(tc_launch(&t.k, (tc_dim3){1, 1, 1}, NULL, t.args, 6), TC_OK);
    CHECK(stub.maps[6].dim[1] == TWO_31 && stub.maps[6].stride[0] == TWO_31 * 6);
    CHECK_EQ_INT(stub.maps[7].dim[0], 64);

    /* every dtype and swizzle */
    static const struct {
        tc_dtype t;
        int cu;
    } types[] = {{TC_DTYPE_I8, RT_CU_TENSOR_MAP_DATA_TYPE_UINT8},      {TC_DTYPE_I16, RT_CU_TENSOR_MAP_DATA_TYPE_UINT16},
                 {TC_DTYPE_I32, RT_CU_TENSOR_MAP_DATA_TYPE_INT32},     {TC_DTYPE_I64, RT_CU_TENSOR_MAP_DATA_TYPE_INT64},
                 {TC_DTYPE_F16, RT_CU_TENSOR_MAP_DATA_TYPE_FLOAT16},   {TC_DTYPE_BF16, RT_CU_TENSOR_MAP_DATA_TYPE_BFLOAT16},
                 {TC_DTYPE_F32, RT_CU_TENSOR_MAP_DATA_TYPE_FLOAT32},   {TC_DTYPE_F64, RT_CU_TENSOR_MAP_DATA_TYPE_FLOAT64},
                 {TC_DTYPE_F8E4M3, RT_CU_TENSOR_MAP_DATA_TYPE_UINT8},  {TC_DTYPE_F8E5M2, RT_CU_TENSOR_MAP_DATA_TYPE_UINT8}};
    static const int swizzles[][2] = {{0, RT_CU_TENSOR_MAP_SWIZZLE_NONE}, {32, RT_CU_TENSOR_MAP_SWIZZLE_32B},
                                      {64, RT_CU_TENSOR_MAP_SWIZZLE_64B}, {128, RT_CU_TENSOR_MAP_SWIZZLE_128B}};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        tc_param_desc params[6];
        memcpy(params, tmap_params, sizeof params);
        params[0].dtype = types[i].t;
        d = tmap_desc;
        d.params = params;
        maps[0] = tmap_maps[0];
        maps[0].box[0] = 32 / (unsigned)rt_dtype_size(types[i].t);
        maps[0].swizzle = swizzles[i % 4][0];
        d.tensor_maps = maps;
        RtTensorMapArgs ma;
        CHECK_EQ_INT(rt_tensor_map_args(&d, 0, t.args, &ma), TC_OK);
        CHECK_EQ_INT(ma.dtype, types[i].cu);
        CHECK_EQ_INT(ma.swizzle, swizzles[i % 4][1]);
        CHECK_EQ_INT(ma.stride[0], (uint64_t)t.s * rt_dtype_size(types[i].t));
        CHECK(!ma.zero);
    }

    /* an extent <= 0 (here M): every element is masked, the map covers 16
     * zero bytes whatever the base and strides */
    tmap_launch_init(&t, &tmap_desc);
    t.a = 0x100002;
    t.s = 3;
    RtTensorMapArgs ma;
    for (int32_t m = 0; m >= -1; m--) {
        t.M = m;
        CHECK_EQ_INT(rt_tensor_map_args(&tmap_desc, 0, t.args, &ma), TC_OK);
        CHECK(ma.zero && ma.address == 0 && ma.rank == 2 && ma.dim[0] == 1 && ma.dim[1] == 1 && ma.stride[0] == 16);
        CHECK(ma.box[0] == 64 && ma.box[1] == 128 && ma.dtype == RT_CU_TENSOR_MAP_DATA_TYPE_FLOAT16);
        CHECK_EQ_INT(rt_tensor_map_args(&tmap_desc, 1, t.args, &ma), TC_OK); /* B's extent M too */
        CHECK(ma.zero && ma.dim[0] == 1 && ma.dim[1] == 1 && ma.dim[2] == 1 && ma.stride[0] == 16 && ma.stride[1] == 16);
    }
    /* a kernel with no context has no zero buffer to point at */
    CHECK_EQ_INT(tc_launch(&t.k, (tc_dim3){1, 1, 1}, NULL, t.args, 6), TC_ERROR_INTERNAL);

    /* what the kernel was not specialized for: refused before the driver */
    tmap_launch_init(&t, &tmap_desc);
    t.a = 0x100008;
    CHECK_EQ_INT(tc_launch(&t.k, (tc_dim3){1, 1, 1}, NULL, t.args, 6), TC_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(tc_last_error(), "kernel k: tensor map 0: pointer argument 0 (a) = 0x100008 is not 16-byte aligned: "
                                  "the kernel was specialized for 16-byte aligned pointers") != NULL);
    t.a = 0x100000;
    t.s = 4100;
    CHECK_EQ_INT(tc_launch(&t.k, (tc_dim3){1, 1, 1}, NULL, t.args, 6), TC_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(tc_last_error(), "the stride of dimension 1, argument 3 (s) = 4100 elements of f16, is not a multiple "
                                  "of 16 bytes: the kernel was specialized for 16-byte aligned strides") != NULL);
    t.s = -8;
    CHECK_EQ_INT(tc_launch(&t.k, (tc_dim3){1, 1, 1}, NULL, t.args, 6), TC_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(tc_last_error(), "= -8 elements of f16, is negative") != NULL);
    t.s = (int64_t)1 << 39; /* 2^40 bytes */
    CHECK_EQ_INT(tc_launch(&t.k, (tc_dim3){1, 1, 1}, NULL, t.args, 6), TC_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(tc_last_error(), "2^40 bytes or more") != NULL);
    t.s = ((int64_t)1 << 39) - 8; /* the largest stride */
    CHECK_EQ_INT(tc_launch(&t.k, (tc_dim3){1, 1, 1}, NULL, t.args, 6), TC_OK);
    CHECK(stub.maps[6].stride[0] == ((uint64_t)1 << 40) - 16);
    int launches = stub.calls;
    t.s = INT64_MIN;
    CHECK_EQ_INT(tc_launch(&t.k, (tc_dim3){1, 1, 1}, NULL, t.args, 6), TC_ERROR_INVALID_ARGUMENT);
    t.s = INT64_MAX;
    CHECK_EQ_INT(tc_launch(&t.k, (tc_dim3){1, 1, 1}, NULL, t.args, 6), TC_ERROR_INVALID_ARGUMENT);
    t.s = 4104;
    maps[0] = tmap_maps[0], maps[1] = tmap_maps[1];
    maps[1].stride[1] = 100; /* a constant stride */
    d = tmap_desc;
    d.tensor_maps = maps;
    t.k.desc = &d;
    CHECK_EQ_INT(tc_launch(&t.k, (tc_dim3){1, 1, 1}, NULL, t.args, 6), TC_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(tc_last_error(), "tensor map 1 over argument 4 (b): the stride of dimension 1, the constant 100 "
                                  "elements of bf16, is not a multiple of 16 bytes") != NULL);
    t.k.desc = &tmap_desc;
    CHECK_EQ_INT(stub.calls, launches);

    /* the driver's refusal, with the map's parameters */
    enc.result = 1; /* CUDA_ERROR_INVALID_VALUE */
    CHECK_EQ_INT(tc_launch(&t.k, (tc_dim3){1, 1, 1}, NULL, t.args, 6), TC_ERROR_CUDA);
    CHECK(strstr(tc_last_error(), "cuTensorMapEncodeTiled (kernel k, tensor map 0 over argument 0 (a): data type 6, "
                                  "rank 2, address 0x100000, dims {4096, 1000}, strides {8208} bytes, box {64, 128}, "
                                  "swizzle 128 bytes)") != NULL);
    enc.result = 0;
    CHECK_EQ_INT(stub.calls, launches);
    /* a driver without the encoder */
    t.k.encode = NULL;
    CHECK_EQ_INT(tc_launch(&t.k, (tc_dim3){1, 1, 1}, NULL, t.args, 6), TC_ERROR_UNSUPPORTED);
    CHECK(strstr(tc_last_error(), "kernel k takes 2 tensor maps (TMA), and this CUDA driver has no "
                                  "cuTensorMapEncodeTiled") != NULL);
    t.k.encode = stub_encode;
    /* an empty grid builds nothing */
    int encodes = enc.calls;
    CHECK_EQ_INT(tc_launch(&t.k, (tc_dim3){0, 1, 1}, NULL, t.args, 6), TC_OK);
    CHECK_EQ_INT(enc.calls, encodes);
    /* a launch error, retried as without maps */
    stub.result = 1;
    CHECK_EQ_INT(tc_launch(&t.k, (tc_dim3){2, 1, 1}, NULL, t.args, 6), TC_ERROR_CUDA);
    CHECK(strstr(tc_last_error(), "cuLaunchKernel(k, grid 2x1x1") != NULL);
    stub.result = 0;

    /* more arguments than tc_launch keeps on its stack */
    enum { N = 70 };
    tc_param_desc many[N];
    void *many_args[N];
    CUdeviceptr base = 0x300000;
    int32_t ext = 77;
    for (int i = 0; i < N; i++) {
        many[i] = (tc_param_desc){"x", i == 0 ? TC_DTYPE_F32 : TC_DTYPE_I32, i == 0, 0};
        many_args[i] = i == 0 ? (void *)&base : (void *)&ext;
    }
    tc_tensor_map_desc one = {0, 1, {N - 1, -1, -1, -1, -1}, {0}, {-1, -1, -1, -1, -1}, {0}, {8}, 0};
    tc_kernel_desc md = {"many", 4, 0, N, many, 1, &one, 0};
    uint32_t mptr = 0;
    tc_kernel mk = {.launch = stub_launch, .num_params = N, .block = 128, .ptr_params = &mptr, .num_ptr_params = 1,
                    .desc = &md, .name = "many", .num_maps = 1, .encode = stub_encode};
    memset(&stub, 0, sizeof stub);
    stub.num_params = N + 1;
    stub.first_map = N;
    CHECK_EQ_INT(tc_launch(&mk, (tc_dim3){1, 1, 1}, NULL, many_args, N), TC_OK);
    CHECK(stub.params[0] == many_args[0] && stub.params[N - 1] == many_args[N - 1]);
    CHECK(stub.maps[N].magic == FAKE_TMAP_MAGIC && stub.maps[N].rank == 1 && stub.maps[N].dim[0] == 77 &&
          stub.maps[N].address == 0x300000 && stub.maps[N].dtype == RT_CU_TENSOR_MAP_DATA_TYPE_FLOAT32);
}

/* The launch record of tests/gpu's fake libcuda when it is the driver
 * loaded, else NULL; *handle is for dlclose (NULL if no driver is loaded). */
static const FakeLaunch *fake_record(void **handle) {
    *handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    void *sym = *handle ? dlsym(*handle, "fake_cuda_last_launch") : NULL;
    if (!sym)
        return NULL;
    FakeLastLaunchFn fn;
    memcpy(&fn, &sym, sizeof fn);
    return fn();
}

/* A context on tests/gpu's fake libcuda and its launch record (*cuda: for
 * dlclose), or NULL with a note that `what` is not checked here: there is
 * no driver, or a real one (then tests/gpu checks it). */
static const FakeLaunch *fake_context(const char *what, tc_context **ctx, void **cuda) {
    *cuda = NULL;
    if (tc_context_create(0, ctx) != TC_OK) {
        fprintf(stderr, "  runtime: no driver (%s): %s not checked\n", tc_last_error(), what);
        return NULL;
    }
    const FakeLaunch *l = fake_record(cuda);
    if (!l) {
        fprintf(stderr, "  runtime: a real driver: %s checked by tests/gpu\n", what);
        tc_context_destroy(*ctx);
        if (*cuda)
            dlclose(*cuda);
    }
    return l;
}

/* The same through the driver (tests/gpu's fake libcuda, which checks the
 * encoder's arguments and records the launch), with the zero buffer. */
TEST(test_launch_tensor_maps_driver) {
    tc_context *ctx;
    void *cuda;
    const FakeLaunch *l = fake_context("tensor maps through the driver", &ctx, &cuda);
    if (!l)
        return;
    static const char ptx[] = ".version 8.0\n.target sm_90a\n.address_size 64\n"
                              ".visible .entry empty_tmap(.param .u64 a, .param .u32 M, .param .u32 K, .param .u64 s, "
                              ".param .u64 b, .param .u8 e, .param .align 64 .b8 a_tmap[128], "
                              ".param .align 64 .b8 b_tmap[128])\n{\n\tret;\n}\n";
    tc_kernel_desc d = tmap_desc;
    d.name = "empty_tmap";
    tc_module *m = NULL;
    tc_kernel *k = NULL;
    CHECK_EQ_INT(tc_module_load_ptx(ctx, ptx, strlen(ptx), &d, 1, &m), TC_OK);
    CHECK_EQ_INT(tc_module_get_kernel(m, "empty_tmap", &k), TC_OK);
    CHECK(k && tc_kernel_get_desc(k)->num_tensor_maps == 2);
    CUdeviceptr a = 0, b = 0;
    CHECK_EQ_INT(tc_mem_alloc(ctx, 1 << 16, &a), TC_OK);
    CHECK_EQ_INT(tc_mem_alloc(ctx, 1 << 16, &b), TC_OK);
    int32_t M = 100, K = 64;
    int64_t s = 72;
    int8_t e = 0;
    void *args[] = {&a, &M, &K, &s, &b, &e};
    long encodes = l->encodes;
    CHECK_EQ_INT(tc_launch(k, (tc_dim3){4, 1, 1}, NULL, args, 6), TC_OK);
    CHECK_EQ_STR(l->kernel, "empty_tmap");
    CHECK_EQ_INT(l->num_params, 8);
    CHECK_EQ_INT(l->encodes - encodes, 2);
    for (int i = 0; i < 6; i++)
        CHECK(l->params[i] == args[i] && !l->is_map[i]);
    CHECK(l->is_map[6] && l->is_map[7]);
    const FakeTensorMap *ma = &l->map[6], *mb = &l->map[7];
    CHECK(ma->magic == FAKE_TMAP_MAGIC && ma->address == a && ma->dim[0] == 64 && ma->dim[1] == 100 &&
          ma->stride[0] == 144 && ma->box[0] == 64 && ma->box[1] == 128 && ma->swizzle == RT_CU_TENSOR_MAP_SWIZZLE_128B);
    CHECK(mb->magic == FAKE_TMAP_MAGIC && mb->address == b && mb->dim[0] == 96 && mb->dim[1] == 100 &&
          mb->dim[2] == TWO_31 && mb->stride[0] == 256 && mb->stride[1] == 32768);
    /* M = 0: both maps over the context's zero buffer, the same at every launch */
    M = 0;
    CHECK_EQ_INT(tc_launch(k, (tc_dim3){4, 1, 1}, NULL, args, 6), TC_OK);
    uint64_t zero = l->map[6].address;
    CHECK(zero && zero != a && zero % 16 == 0 && l->map[7].address == zero);
    CHECK(l->map[6].dim[0] == 1 && l->map[6].dim[1] == 1 && l->map[6].stride[0] == 16 && l->map[6].box[0] == 64);
    CHECK(l->map[7].dim[2] == 1 && l->map[7].stride[1] == 16);
    unsigned char bytes[16];
    memset(bytes, 0xFF, sizeof bytes);
    CHECK_EQ_INT(tc_memcpy_dtoh(ctx, bytes, (CUdeviceptr)zero, 16), TC_OK);
    int nonzero = 0;
    for (int i = 0; i < 16; i++)
        nonzero += bytes[i] != 0;
    CHECK_EQ_INT(nonzero, 0);
    M = -5;
    CHECK_EQ_INT(tc_launch(k, (tc_dim3){4, 1, 1}, NULL, args, 6), TC_OK);
    CHECK(l->map[6].address == zero);
    /* the driver's own checks agree with tc_launch's */
    M = 100;
    s = 68;
    long launches = l->launches;
    CHECK_EQ_INT(tc_launch(k, (tc_dim3){4, 1, 1}, NULL, args, 6), TC_ERROR_INVALID_ARGUMENT);
    CHECK_EQ_INT(l->launches, launches);
    /* a description the loader refuses */
    tc_tensor_map_desc bad = tmap_maps[0];
    bad.base = 1;
    d.tensor_maps = &bad;
    d.num_tensor_maps = 1;
    tc_module *m2 = NULL;
    CHECK_EQ_INT(tc_module_load_ptx(ctx, ptx, strlen(ptx), &d, 1, &m2), TC_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(tc_last_error(), "kernels[0] (empty_tmap): tensor_maps[0]: base 1 is not a pointer parameter") != NULL);
    CHECK(m2 == NULL);
    CHECK_EQ_INT(tc_mem_free(ctx, a), TC_OK);
    CHECK_EQ_INT(tc_mem_free(ctx, b), TC_OK);
    CHECK_EQ_INT(tc_context_destroy(ctx), TC_OK); /* frees the zero buffer too */
    dlclose(cuda);
}

/* ---- persistent kernels at launch ---- */

/* The int32 a launch passed as hidden argument i. */
static int32_t stub_int(int i) {
    int32_t v;
    memcpy(&v, stub.params[i], sizeof v);
    return v;
}

/* tc_launch of persistent kernels with a stub driver: as many programs as
 * the device holds (k.programs), or fewer for a smaller grid, along x; the
 * grid's extents after the arguments, the maps after them. */
TEST(test_launch_persistent) {
    static const uint32_t ptrs[] = {0, 1};
    tc_kernel_desc d = softmax_desc;
    d.persistent = 1;
    tc_kernel k = {.launch = stub_launch, .num_params = 4, .block = 128, .shared = 1024, .ptr_params = ptrs,
                   .num_ptr_params = 2, .desc = &d, .name = "softmax", .programs = 264};
    CUdeviceptr out = 0x10000, x = 0x20000;
    int64_t stride = 1000;
    int32_t n = 1000;
    void *args[] = {&out, &x, &stride, &n};
    memset(&stub, 0, sizeof stub);
    stub.num_params = 7;
    stub.first_map = 7;
    CHECK_EQ_INT(tc_launch(&k, (tc_dim3){1000, 3, 2}, NULL, args, 4), TC_OK);
    CHECK_EQ_INT(stub.calls, 1);
    CHECK(stub.grid[0] == 264 && stub.grid[1] == 1 && stub.grid[2] == 1);
    CHECK(stub.block[0] == 128 && stub.shared == 1024);
    for (int i = 0; i < 4; i++)
        CHECK(stub.params[i] == args[i]);
    CHECK(stub_int(4) == 1000 && stub_int(5) == 3 && stub_int(6) == 2);
    /* fewer programs than the device holds: one each */
    CHECK_EQ_INT(tc_launch(&k, (tc_dim3){10, 3, 2}, NULL, args, 4), TC_OK);
    CHECK(stub.grid[0] == 60 && stub.grid[1] == 1 && stub.grid[2] == 1);
    CHECK(stub_int(4) == 10 && stub_int(5) == 3 && stub_int(6) == 2);
    /* the largest grid, and one program more */
    CHECK_EQ_INT(tc_launch(&k, (tc_dim3){TC_MAX_GRID_X, 1, 1}, NULL, args, 4), TC_OK);
    CHECK(stub.grid[0] == 264 && stub_int(4) == INT32_MAX);
    CHECK_EQ_INT(tc_launch(&k, (tc_dim3){1u << 15, 1u << 15, 2}, NULL, args, 4), TC_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(tc_last_error(), "tc_launch: persistent kernel softmax: grid 32768x32768x2 has 2147483648 programs, "
                                  "more than 2^31 - 1") != NULL);
    CHECK_EQ_INT(tc_launch(&k, (tc_dim3){TC_MAX_GRID_X, TC_MAX_GRID_YZ, TC_MAX_GRID_YZ}, NULL, args, 4),
                 TC_ERROR_INVALID_ARGUMENT);
    /* the usual checks first; an empty grid launches nothing */
    CHECK_EQ_INT(tc_launch(&k, (tc_dim3){1, TC_MAX_GRID_YZ + 1, 1}, NULL, args, 4), TC_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(tc_last_error(), "is larger than") != NULL);
    CHECK_EQ_INT(tc_launch(&k, (tc_dim3){1, 1, 1}, NULL, args, 3), TC_ERROR_INVALID_ARGUMENT);
    CHECK_EQ_INT(tc_launch(&k, (tc_dim3){0, 5, 5}, NULL, args, 4), TC_OK);
    CHECK_EQ_INT(stub.calls, 3);
    /* the driver's error names the launch it was given */
    stub.result = 1;
    CHECK_EQ_INT(tc_launch(&k, (tc_dim3){1000, 1, 1}, NULL, args, 4), TC_ERROR_CUDA);
    CHECK(strstr(tc_last_error(), "cuLaunchKernel(softmax, grid 264x1x1, block 128x1x1, shared 1024)") != NULL);
    stub.result = 0;

    /* with tensor maps: the arguments, the grid, the maps */
    TmapLaunch t;
    tc_kernel_desc pd = tmap_desc;
    pd.persistent = 1;
    tmap_launch_init(&t, &pd);
    t.k.programs = 8;
    stub.num_params = 11;
    stub.first_map = 9;
    CHECK_EQ_INT(tc_launch(&t.k, (tc_dim3){3, 2, 1}, NULL, t.args, 6), TC_OK);
    CHECK(stub.calls == 1 && enc.calls == 2);
    CHECK(stub.grid[0] == 6 && stub.grid[1] == 1 && stub.grid[2] == 1);
    for (int i = 0; i < 6; i++)
        CHECK(stub.params[i] == t.args[i]);
    CHECK(stub_int(6) == 3 && stub_int(7) == 2 && stub_int(8) == 1);
    CHECK(stub.maps[9].magic == FAKE_TMAP_MAGIC && stub.maps[9].address == 0x100000 && stub.maps[9].dim[1] == 1000);
    CHECK(stub.maps[10].magic == FAKE_TMAP_MAGIC && stub.maps[10].address == 0x200000);
    CHECK_EQ_INT(tc_launch(&t.k, (tc_dim3){100, 100, 1}, NULL, t.args, 6), TC_OK);
    CHECK(stub.grid[0] == 8 && stub_int(6) == 100 && stub_int(7) == 100);
}

/* A persistent kernel through the driver (tests/gpu's fake libcuda: 132
 * multiprocessors that hold two programs each, or $TILEC_FAKE_CUDA_OCCUPANCY),
 * loaded from tc_opt's PTX of persistent_ir with tc_module_load. */
TEST(test_launch_persistent_driver) {
    tc_context *ctx;
    void *cuda;
    const FakeLaunch *l = fake_context("persistent kernels through the driver", &ctx, &cuda);
    if (!l)
        return;
    tc_binary *bin = persistent_ptx();
    tc_module *m = NULL;
    tc_kernel *k = NULL;
    CHECK_EQ_INT(tc_module_load(ctx, bin, &m), TC_OK);
    CHECK_EQ_INT(tc_module_get_kernel(m, "empty_persistent", &k), TC_OK);
    CHECK(k && tc_kernel_get_desc(k)->persistent == 1 && k->programs == 264);
    /* the driver's figures for the kernel (the fake's: 40 registers, 8 bytes local, 2 programs) */
    tc_kernel_info info;
    CHECK_EQ_INT(tc_kernel_get_info(k, &info), TC_OK);
    CHECK(info.registers == 40 && info.local_bytes == 8 && info.static_shared_bytes == 0 && info.max_threads == 1024 &&
          info.programs_per_sm == 2);
    CHECK_EQ_INT(tc_kernel_get_info(k, NULL), TC_ERROR_INVALID_ARGUMENT);
    CHECK_EQ_INT(tc_kernel_get_info(NULL, &info), TC_ERROR_INVALID_ARGUMENT);
    CUdeviceptr a = 0;
    CHECK_EQ_INT(tc_mem_alloc(ctx, 1 << 16, &a), TC_OK);
    int32_t M = 100, K = 64;
    int64_t s = 72;
    void *args[] = {&a, &M, &K, &s};
    CHECK_EQ_INT(tc_launch(k, (tc_dim3){40, 30, 1}, NULL, args, 4), TC_OK);
    CHECK_EQ_STR(l->kernel, "empty_persistent");
    CHECK_EQ_INT(l->num_params, 8);
    CHECK(l->grid[0] == 264 && l->grid[1] == 1 && l->grid[2] == 1 && l->block == 128);
    int32_t g[3] = {0, 0, 0};
    for (int i = 0; i < 3; i++)
        if (l->params[4 + i])
            memcpy(&g[i], l->params[4 + i], sizeof g[i]);
    CHECK(g[0] == 40 && g[1] == 30 && g[2] == 1);
    CHECK(!l->is_map[6] && l->is_map[7] && l->map[7].magic == FAKE_TMAP_MAGIC && l->map[7].address == a);
    CHECK_EQ_INT(tc_launch(k, (tc_dim3){7, 1, 1}, NULL, args, 4), TC_OK);
    CHECK_EQ_INT(l->grid[0], 7);
    CHECK_EQ_INT(tc_mem_free(ctx, a), TC_OK);
    CHECK_EQ_INT(tc_module_unload(m), TC_OK);

    /* a kernel of which no program fits is refused at load */
    setenv("TILEC_FAKE_CUDA_OCCUPANCY", "0", 1);
    m = NULL;
    CHECK_EQ_INT(tc_module_load(ctx, bin, &m), TC_ERROR_UNSUPPORTED);
    CHECK(strstr(tc_last_error(), "persistent kernel empty_persistent: the device holds none of its programs at once "
                                  "(132 multiprocessors, 0 programs of 128 threads and 0 bytes of dynamic shared "
                                  "memory on each)") != NULL);
    CHECK(m == NULL);
    unsetenv("TILEC_FAKE_CUDA_OCCUPANCY");
    /* the caller's descriptions: 0 or 1 */
    size_t len;
    const char *ptx = tc_binary_text(bin, &len);
    tc_kernel_desc d = persistent_desc;
    d.persistent = 2;
    CHECK_EQ_INT(tc_module_load_ptx(ctx, ptx, len, &d, 1, &m), TC_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(tc_last_error(), "tc_module_load_ptx: kernels[0] (empty_persistent): persistent 2 is not 0 or 1") !=
          NULL);
    d.persistent = 1;
    CHECK_EQ_INT(tc_module_load_ptx(ctx, ptx, len, &d, 1, &m), TC_OK);
    CHECK_EQ_INT(tc_module_unload(m), TC_OK);
    tc_binary_destroy(bin);
    CHECK_EQ_INT(tc_context_destroy(ctx), TC_OK);
    dlclose(cuda);
}

/* ---- AOT ---- */

/* The launcher's header and source for in (empty buffers if it fails). */
static void aot_emit(const CgAotInput *in, Buf *h, Buf *c) {
    buf_init(h);
    buf_init(c);
    TcGuard g;
    if (!TC_GUARD(g)) {
        cg_aot_emit(in, h, c);
        tc_guard_pop(&g);
    }
}

static const char fake_ptx[] = "//\n// a test \"PTX\" with \\ and ?\?= in it\n.version 8.0\n.target sm_90a\n";

TEST(test_aot_emit) {
    RtMeta sig, meta;
    tc_kernel_desc d = softmax_desc;
    CHECK_EQ_INT(rt_meta_copy(&d, 1, &sig), TC_OK);
    d.shared_bytes = 65536;
    CHECK_EQ_INT(rt_meta_copy(&d, 1, &meta), TC_OK);
    static const uint8_t cubin[20] = {0x7f, 'E', 'L', 'F', 2, 1, 1};
    CgAotImage images[2] = {{"sm_80", fake_ptx, strlen(fake_ptx), NULL, 0, &sig},
                            {"sm_90a", fake_ptx, strlen(fake_ptx), cubin, sizeof cubin, &meta}};
    CgAotInput in = {"mylib", "mylib.h", "sm.tile", "BLOCK=1024", &sig, images, 2, false};
    Buf h, c;
    aot_emit(&in, &h, &c);
    CHECK(has(h.data, "tc_status mylib_softmax(CUstream stream, void *out, const void *x, int64_t "
                      "stride, int32_t n, tc_dim3 grid);"));
    CHECK(has(h.data, "/* softmax(f16* out, const f16* x, i64 stride, i32 n)"));
    CHECK(has(h.data, "1024 bytes (sm_80), 65536 bytes (sm_90a)"));
    CHECK(has(h.data, "tc_status mylib_load(CUcontext ctx);"));
    CHECK(has(c.data, "\"// a test \\\"PTX\\\" with \\\\ and ?\\?= in it\\n\""));
    CHECK(c.data &&
          strstr(c.data, "static _Alignas(16) const unsigned char mylib_cubin_1[] = {\n    0x7f, 0x45,") != NULL);
    /* preference: the cubin, then sm_90a PTX, then sm_80 PTX */
    const char *text = c.data ? c.data : "";
    const char *p1 = strstr(text, "{\"sm_90a cubin\", 90, 1, 1, mylib_cubin_1, {128}, {65536}, {0}, {NULL}, {0}}");
    const char *p2 = strstr(text, "{\"sm_90a PTX\", 90, 1, 0, mylib_ptx_1, {128}, {65536}, {0}, {NULL}, {0}}");
    const char *p3 = strstr(text, "{\"sm_80 PTX\", 80, 0, 0, mylib_ptx_0, {128}, {1024}, {0}, {NULL}, {0}}");
    CHECK(p1 && p2 && p3 && p1 < p2 && p2 < p3);
    CHECK(has(c.data, "dlopen(\"libcuda.so.1\""));
    CHECK(has(c.data, "#define mylib_MAX_MAPS 1 "));
    CHECK(has(c.data, "#define mylib_LINE_INFO 0 "));
    CHECK(has(c.data, "void *tc_args[4] = {"));
    CHECK(has(c.data, "return mylib_launch(0, \"mylib_softmax\", grid, stream, tc_args, 4);"));
    CHECK(c.data && !has(c.data, "exit(") && !has(c.data, "abort("));
    CHECK(c.data && strchr(c.data, '@') == NULL);
    buf_free(&h);
    buf_free(&c);
    rt_meta_free(&sig);
    rt_meta_free(&meta);
}

/* Runs a shell command; its output (up to cap bytes) and exit status. */
static int run_command(const char *cmd, char *out, size_t cap) {
    FILE *p = popen(cmd, "r");
    size_t n = 0;
    if (!p)
        return -1;
    while (n + 1 < cap && fgets(out + n, (int)(cap - n), p))
        n += strlen(out + n);
    out[n] = 0;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static bool write_text(const char *dir, const char *name, const char *text) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    bool ok = f && fputs(text, f) >= 0;
    return f && fclose(f) == 0 && ok;
}

/* Compiles a generated launcher (tlib.h and tlib.c: h and c) with main_src
 * into a program, with the build's compiler and sanitizers (as the fake
 * libcuda has them) under -Werror -pedantic, and runs it: its exit status,
 * its output in out; 77 when it found no fake libcuda, -1 when there is no
 * compiler. `what` names the launcher in the notes. */
static int run_launcher(const Buf *h, const Buf *c, const char *main_src, const char *what, char *out, size_t cap) {
    char *dir = make_temp_dir();
    char cmd[2048];
    int rc = -1;
    bool wrote = write_text(dir, "tlib.h", h->data ? h->data : "") &&
                 write_text(dir, "tlib.c", c->data ? c->data : "") && write_text(dir, "main.c", main_src);
    CHECK(wrote);
    out[0] = 0;
    snprintf(cmd, sizeof cmd, "%s --version >/dev/null 2>&1", TILEC_C_COMPILER);
    if (run_command(cmd, out, cap) != 0) {
        fprintf(stderr, "  runtime: no %s: the generated launcher %s is not compiled\n", TILEC_C_COMPILER, what);
    } else if (wrote) {
        snprintf(cmd, sizeof cmd,
                 "cd %s && %s -std=c11 -Wall -Wextra -Werror -pedantic %s -I%s/include -I%s/tests/gpu -o prog tlib.c "
                 "main.c -ldl 2>&1 && ./prog",
                 dir, TILEC_C_COMPILER, TILEC_PROGRAM_FLAGS, TILEC_SOURCE_DIR, TILEC_SOURCE_DIR);
        rc = run_command(cmd, out, cap);
        if (rc == 77)
            fprintf(stderr, "  runtime: no fake libcuda: the generated launcher %s compiled, not run\n", what);
        else if (rc != 0)
            fprintf(stderr, "%s\n%s\n", cmd, out);
    }
    remove_tree(dir);
    free(dir);
    return rc;
}

/* The includes of a program over the generated launcher tlib, and the part
 * of its main that loads the launcher and finds the fake libcuda's launch
 * record `last` (exit 77 without the fake). */
#define AOT_MAIN_INCLUDES                                                                                              \
    "#include \"tlib.h\"\n"                                                                                            \
    "#include \"fake_libcuda.h\"\n"                                                                                    \
    "#include <dlfcn.h>\n#include <stdio.h>\n#include <string.h>\n"
#define AOT_MAIN_LOAD                                                                                                  \
    "    tc_status st = tlib_load(NULL);\n"                                                                            \
    "    void *h = dlopen(\"libcuda.so.1\", RTLD_NOW | RTLD_NOLOAD);\n"                                                \
    "    void *sym = h ? dlsym(h, \"fake_cuda_last_launch\") : NULL;\n"                                                \
    "    FakeLastLaunchFn last;\n"                                                                                     \
    "    if (st == TC_ERROR_NO_DRIVER || !sym) { printf(\"no fake driver\\n\"); return 77; }\n"                        \
    "    if (st != TC_OK) { printf(\"load: %s\\n\", tlib_last_error()); return 1; }\n"                                 \
    "    memcpy(&last, &sym, sizeof last);\n"

/* The launcher tlib (h: tlib.h, c: tlib.c) of one kernel, its signature
 * sig, in two images: sm_80 (d80, ptx80) and sm_90a (d90, ptx90 of len90
 * bytes). */
typedef struct AotTwo {
    RtMeta sig, m80, m90;
    Buf h, c;
} AotTwo;

static void aot_two_emit(AotTwo *t, const char *source_name, const tc_kernel_desc *sig, const tc_kernel_desc *d80,
                         const char *ptx80, const tc_kernel_desc *d90, const char *ptx90, size_t len90,
                         bool line_info) {
    CHECK_EQ_INT(rt_meta_copy(sig, 1, &t->sig), TC_OK);
    CHECK_EQ_INT(rt_meta_copy(d80, 1, &t->m80), TC_OK);
    CHECK_EQ_INT(rt_meta_copy(d90, 1, &t->m90), TC_OK);
    CgAotImage images[2] = {{"sm_80", ptx80, strlen(ptx80), NULL, 0, &t->m80},
                            {"sm_90a", ptx90, len90, NULL, 0, &t->m90}};
    CgAotInput in = {"tlib", "tlib.h", source_name, "", &t->sig, images, 2, line_info};
    aot_emit(&in, &t->h, &t->c);
}

static void aot_two_free(AotTwo *t) {
    buf_free(&t->h);
    buf_free(&t->c);
    rt_meta_free(&t->sig);
    rt_meta_free(&t->m80);
    rt_meta_free(&t->m90);
}

/* A program over the generated launcher: it loads it, launches the kernel
 * with tensor maps and prints what the fake libcuda saw (exit 77 without
 * the fake). */
static const char aot_main[] =
    AOT_MAIN_INCLUDES
    "static void show(const FakeTensorMap *m) {\n"
    "    printf(\" dt%u r%u %llx dims\", m->dtype, m->rank, (unsigned long long)m->address);\n"
    "    for (unsigned d = 0; d < m->rank; d++) printf(\" %llu\", (unsigned long long)m->dim[d]);\n"
    "    printf(\" strides\");\n"
    "    for (unsigned d = 1; d < m->rank; d++) printf(\" %llu\", (unsigned long long)m->stride[d - 1]);\n"
    "    printf(\" box\");\n"
    "    for (unsigned d = 0; d < m->rank; d++) printf(\" %u\", m->box[d]);\n"
    "    printf(\" sw%u\\n\", m->swizzle);\n"
    "}\n"
    "int main(void) {\n"
    "    tc_dim3 grid = {1, 1, 1};\n"
    AOT_MAIN_LOAD
    "    st = tlib_empty_tmap(NULL, (void *)0x10000, 100, 64, 72, (void *)0x20000, 48, grid);\n"
    "    printf(\"%s %d %s params %d\\n\", tlib_image(), (int)st, last()->kernel, last()->num_params);\n"
    "    show(&last()->map[6]);\n"
    "    show(&last()->map[7]);\n"
    "    st = tlib_empty_tmap(NULL, (void *)0x10000, 100, 64, 68, (void *)0x20000, 48, grid);\n"
    "    printf(\"%d %s\\n\", (int)st, tlib_last_error());\n"
    "    return tlib_unload() == TC_OK ? 0 : 1;\n"
    "}\n";

/* A kernel whose sm_90a image takes tensor maps: the generated tables, and
 * the generated C compiled (-Werror -pedantic) and run under the fake
 * libcuda (under unit.fake.runtime), where the maps must be tilec's. */
TEST(test_aot_tensor_maps) {
    tc_tensor_map_desc maps[2] = {tmap_maps[0], tmap_maps[1]};
    maps[1].dim_param[0] = 5; /* e, an i8: the launcher passes it in an int32_t */
    tc_kernel_desc d = tmap_desc, plain = tmap_desc;
    d.name = plain.name = "empty_tmap";
    d.tensor_maps = maps;
    plain.num_tensor_maps = 0;
    plain.tensor_maps = NULL;
    static const char ptx80[] = ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry empty_tmap(.param "
                                ".u64 a, .param .u32 M, .param .u32 K, .param .u64 s, .param .u64 b, .param .u32 e)\n"
                                "{\n\tret;\n}\n";
    static const char ptx90[] = ".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry empty_tmap(.param "
                                ".u64 a, .param .u32 M, .param .u32 K, .param .u64 s, .param .u64 b, .param .u32 e, "
                                ".param .align 64 .b8 a_tmap[128], .param .align 64 .b8 b_tmap[128])\n{\n\tret;\n}\n";
    AotTwo t;
    aot_two_emit(&t, "tmap.tile", &plain, &plain, ptx80, &d, ptx90, strlen(ptx90), false);
    const char *h = t.h.data, *c = t.c.data;
    CHECK(has(h, "tc_status tlib_empty_tmap(CUstream stream, const void *a, int32_t M, int32_t K, int64_t s, "
                 "void *b, int8_t e, tc_dim3 grid);"));
    CHECK(has(h, " *   TMA tensor maps it builds at each launch: 0 (sm_80), 2 (sm_90a): the pointers and strides "
                 "they read must be 16-byte aligned */\n"));
    CHECK(has(c, "#define tlib_MAX_MAPS 2 "));
    CHECK(has(c, "static const struct tlib_tensor_map tlib_maps_1_0[] = {\n"
                 "    {\"a\", 0, 6, 2, 2, {2, 1}, {4, 4}, {0, 0}, {-1, 3}, {0, 8}, {0, 0}, {64, 128}, 3},\n"
                 "    {\"b\", 4, 9, 2, 3, {5, 1, -1}, {4, 4, 0}, {96, 0, 0}, {-1, -1, -1}, {0, 0, 0}, "
                 "{0, 128, 16384}, {32, 16, 1}, 2},\n};"));
    CHECK(!has(c, "tlib_maps_0_0"));
    CHECK(has(c, "{\"sm_90a PTX\", 90, 1, 0, tlib_ptx_1, {128}, {0}, {2}, {tlib_maps_1_0}, {0}},"));
    CHECK(has(c, "{\"sm_80 PTX\", 80, 0, 0, tlib_ptx_0, {128}, {0}, {0}, {NULL}, {0}},"));
    CHECK(has(c, "    int32_t tc_a5 = e;\n    void *tc_args[8] = {(void *)&a, (void *)&M, (void *)&K, (void *)&s, "
                 "(void *)&b, &tc_a5};"));
    CHECK(has(c, "return tlib_launch(0, \"tlib_empty_tmap\", grid, stream, tc_args, 6);"));

    char out[4096];
    int rc = run_launcher(&t.h, &t.c, aot_main, "with tensor maps", out, sizeof out);
    if (rc != 77 && rc != -1) {
        CHECK_EQ_INT(rc, 0);
        CHECK(strstr(out, "sm_90a PTX 0 empty_tmap params 8\n"
                          " dt6 r2 10000 dims 64 100 strides 144 box 64 128 sw3\n"
                          " dt9 r3 20000 dims 48 100 2147483648 strides 256 32768 box 32 16 1 sw2\n"
                          "1 tlib_empty_tmap: the stride of dimension 1 of a's tensor map (map 0) is 68 elements "
                          "of 2 bytes: the kernel was specialized for 16-byte aligned strides") != NULL);
    }
    aot_two_free(&t);
}

/* A program over a generated launcher whose sm_90a kernel is persistent:
 * what the fake libcuda saw of a launch, and a grid it refuses. */
static const char aot_persistent_main[] =
    AOT_MAIN_INCLUDES
    "int main(void) {\n"
    "    tc_dim3 grid = {40, 30, 1};\n"
    "    int32_t g[3] = {0, 0, 0};\n"
    "    const FakeLaunch *l;\n"
    AOT_MAIN_LOAD
    "    l = last();\n"
    "    st = tlib_empty_persistent(NULL, (void *)0x10000, 100, 64, 72, grid);\n"
    "    for (int i = 0; i < 3; i++) if (l->params[4 + i]) memcpy(&g[i], l->params[4 + i], sizeof g[i]);\n"
    "    printf(\"%s %d %s params %d programs %u grid %d %d %d map %d %llx\\n\", tlib_image(), (int)st, l->kernel,\n"
    "           l->num_params, l->grid[0], g[0], g[1], g[2], l->is_map[7], (unsigned long long)l->map[7].address);\n"
    "    grid.x = 1u << 16, grid.y = 1u << 15;\n"
    "    st = tlib_empty_persistent(NULL, (void *)0x10000, 100, 64, 72, grid);\n"
    "    printf(\"%d %s\\n\", (int)st, tlib_last_error());\n"
    "    return tlib_unload() == TC_OK ? 0 : 1;\n"
    "}\n";

/* A kernel persistent in its sm_90a image (tc_opt's PTX of persistent_ir,
 * the grid and a tensor map after its arguments) and not in its sm_80 one:
 * the generated tables, and the generated C compiled (-Werror -pedantic)
 * and run under the fake libcuda (under unit.fake.runtime). */
TEST(test_aot_persistent) {
    tc_kernel_desc plain = persistent_desc;
    plain.num_tensor_maps = 0;
    plain.tensor_maps = NULL;
    plain.persistent = 0;
    static const char ptx80[] = ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry empty_persistent("
                                ".param .u64 a, .param .u32 M, .param .u32 K, .param .u64 s)\n{\n\tret;\n}\n";
    tc_binary *bin = persistent_ptx();
    size_t len;
    const char *ptx90 = tc_binary_text(bin, &len);
    AotTwo t;
    aot_two_emit(&t, "persistent.tile", &plain, &plain, ptx80, &persistent_desc, ptx90, len, false);
    const char *h = t.h.data, *c = t.c.data;
    CHECK(has(h, "tc_status tlib_empty_persistent(CUstream stream, const void *a, int32_t M, int32_t K, int64_t s, "
                 "tc_dim3 grid);"));
    CHECK(has(h, ";\n *   persistent in sm_90a: as many programs as the device holds at once loop over the "
                 "grid,\n *   which must have at most 2^31 - 1 programs */\n"));
    CHECK(has(c, "{\"sm_90a PTX\", 90, 1, 0, tlib_ptx_1, {128}, {0}, {1}, {tlib_maps_1_0}, {1}},"));
    CHECK(has(c, "{\"sm_80 PTX\", 80, 0, 0, tlib_ptx_0, {128}, {0}, {0}, {NULL}, {0}},"));
    /* room for the grid and the map after the arguments */
    CHECK(has(c, "    void *tc_args[8] = {(void *)&a, (void *)&M, (void *)&K, (void *)&s};"));
    CHECK(has(c, "return tlib_launch(0, \"tlib_empty_persistent\", grid, stream, tc_args, 4);"));
    char out[4096];
    int rc = run_launcher(&t.h, &t.c, aot_persistent_main, "of a persistent kernel", out, sizeof out);
    if (rc != 77 && rc != -1) {
        CHECK_EQ_INT(rc, 0);
        CHECK(strstr(out, "sm_90a PTX 0 empty_persistent params 8 programs 264 grid 40 30 1 map 1 10000\n"
                          "1 tlib_empty_persistent: grid 65536x32768x1 has 2147483648 programs, more than 2^31 - 1 "
                          "(the kernel is persistent)") != NULL);
    }
    aot_two_free(&t);
    tc_binary_destroy(bin);
}

/* A program over a generated launcher: the image it loaded, and whether
 * the driver was asked to keep the PTX's line info. */
static const char aot_line_info_main[] =
    AOT_MAIN_INCLUDES
    "int main(void) {\n"
    AOT_MAIN_LOAD
    "    printf(\"%s line_info %d\\n\", tlib_image(), last()->line_info);\n"
    "    return tlib_unload() == TC_OK ? 0 : 1;\n"
    "}\n";

/* A launcher of PTX with line info (tilec --aot -g) loads it with
 * CU_JIT_GENERATE_LINE_INFO; one without, without (under unit.fake.runtime). */
TEST(test_aot_line_info) {
    static const tc_kernel_desc d = {"empty", 4, 0, 0, NULL, 0, NULL, 0};
    static const char ptx80[] = ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry empty()\n{\n"
                                "\t.loc\t1 1 1\n\tret;\n}\n\t.file\t1 \"e.tile\"\n";
    static const char ptx90[] = ".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry empty()\n{\n"
                                "\t.loc\t1 1 1\n\tret;\n}\n\t.file\t1 \"e.tile\"\n";
    for (int g = 1; g >= 0; g--) {
        AotTwo t;
        aot_two_emit(&t, "e.tile", &d, &d, ptx80, &d, ptx90, strlen(ptx90), g);
        CHECK(has(t.c.data, g ? "#define tlib_LINE_INFO 1 " : "#define tlib_LINE_INFO 0 "));
        char out[4096], want[64];
        int rc = run_launcher(&t.h, &t.c, aot_line_info_main, "with line info", out, sizeof out);
        if (rc != 77 && rc != -1) {
            CHECK_EQ_INT(rc, 0);
            snprintf(want, sizeof want, "sm_90a PTX line_info %d\n", g);
            CHECK(strstr(out, want) != NULL);
        }
        aot_two_free(&t);
    }
}

TEST(test_aot_errors) {
    tc_source src = {"sm.tile", softmax_src, strlen(softmax_src)};
    tc_aot_request req;
    tc_aot_request_init(&req);
    req.source = &src;
    req.name = "not an identifier";
    tc_aot_output *out = (tc_aot_output *)1;
    CHECK_EQ_INT(tc_aot_generate(&req, &out, NULL), TC_ERROR_INVALID_ARGUMENT);
    CHECK(out == NULL);
    req.name = "lib";
    const char *archs[] = {"sm_75"};
    req.archs = archs;
    req.num_archs = 1;
    CHECK_EQ_INT(tc_aot_generate(&req, &out, NULL), TC_ERROR_UNSUPPORTED);
    req.archs = NULL;
    req.num_archs = 0;
    tc_source bad = {"bad.tile", "kernel k(f32* x) { let = ; }", 28};
    req.source = &bad;
    tc_diagnostics *diags;
    tc_diagnostics_create(&diags);
    CHECK_EQ_INT(tc_aot_generate(&req, &out, diags), TC_ERROR_COMPILE);
    CHECK(strstr(tc_diagnostics_text(diags), "bad.tile:1:") != NULL);
    tc_diagnostics_destroy(diags);
}

/* A kernel that moves registers between warpgroups (setmaxnreg: the
 * warp-specialized matmul, TILEC_WARP_SPECIALIZE=1) is loaded as PTX, a
 * whole program, not through the driver's linker (which ignores
 * setmaxnreg), and launches its producer warpgroup: 12 warps; with 4
 * consumer warps (256 threads) registers do not move and the kernel is
 * linked as usual. Needs the fake libcuda (it has no CPU matmul: the
 * launches themselves fail). */
TEST(test_jit_whole_program_setmaxnreg) {
    setenv("TILEC_WARP_SPECIALIZE", "1", 1);
    tc_context *ctx = NULL;
    tc_status st = tc_context_create(0, &ctx);
    unsetenv("TILEC_WARP_SPECIALIZE");
    void *cuda = NULL;
    const FakeLaunch *l = st == TC_OK ? fake_record(&cuda) : NULL;
    if (!l) {
        fprintf(stderr, "  runtime: no fake libcuda: the whole-program load of setmaxnreg kernels not checked\n");
        if (ctx)
            tc_context_destroy(ctx);
        if (cuda)
            dlclose(cuda);
        return;
    }
    long ptx_loads = l->ptx_loads, launches = l->launches;
    CUdeviceptr a = 0, b = 0, c = 0;
    size_t bytes = (size_t)4096 * 4096 * 2;
    CHECK_EQ_INT(tc_mem_alloc(ctx, bytes, &a), TC_OK);
    CHECK_EQ_INT(tc_mem_alloc(ctx, bytes, &b), TC_OK);
    CHECK_EQ_INT(tc_mem_alloc(ctx, bytes, &c), TC_OK);
    /* 1024^3 f16 row-major: the 128 x 128 tile on 4 consumer warps + 4 */
    st = tc_matmul(ctx, NULL, TC_DTYPE_F16, c, a, b, 0, 1024, 1024, 1024, 1024, 1, 1024, 1, 1024, 1,
                   TC_ACTIVATION_NONE);
    CHECK(st != TC_OK && strstr(tc_last_error(), "CUDA_ERROR_NOT_SUPPORTED") != NULL);
    CHECK_EQ_INT(l->ptx_loads - ptx_loads, 0);
    CHECK_EQ_INT(l->launches - launches, 1);
    CHECK_EQ_STR(l->kernel, "matmul");
    CHECK_EQ_INT(l->block, 256);
    /* 4096^3: the 128 x 256 tile on 8 consumer warps + 4, setmaxnreg */
    st = tc_matmul(ctx, NULL, TC_DTYPE_F16, c, a, b, 0, 4096, 4096, 4096, 4096, 1, 4096, 1, 4096, 1,
                   TC_ACTIVATION_NONE);
    CHECK(st != TC_OK && strstr(tc_last_error(), "CUDA_ERROR_NOT_SUPPORTED") != NULL);
    CHECK_EQ_INT(l->ptx_loads - ptx_loads, 1);
    CHECK_EQ_INT(l->launches - launches, 2);
    CHECK_EQ_INT(l->block, 384);
    tc_mem_free(ctx, a);
    tc_mem_free(ctx, b);
    tc_mem_free(ctx, c);
    tc_context_destroy(ctx);
    dlclose(cuda);
}

/* Which PTX the driver compiles with CU_JIT_GENERATE_LINE_INFO: PTX with a
 * `.loc` directive, as LLVM and nvcc print it. */
TEST(test_ptx_has_line_info) {
    static const char *const with[] = {
        "\t.loc\t1 5 3\n",
        ".visible .entry k()\n{\n\t.loc\t1 1 0\n\tret;\n}\n\t.file\t1 \"k.tile\"\n",
        "  .loc 1 23 1\n",
        ".loc\t2 1 1",
    };
    static const char *const without[] = {
        "",
        ".visible .entry k()\n{\n\tret;\n}\n",
        "\t.local .align 4 .b8 __local_depot0[8];\n",
        "\tmov.u32 %r1, %tid.x; // .locus\n",
        ".loc",
        "x.loc 1 2 3",
    };
    for (size_t i = 0; i < sizeof with / sizeof with[0]; i++)
        CHECK(rt_ptx_has_line_info(with[i], strlen(with[i])));
    for (size_t i = 0; i < sizeof without / sizeof without[0]; i++)
        CHECK(!rt_ptx_has_line_info(without[i], strlen(without[i])));
    /* the length bounds the search */
    CHECK(!rt_ptx_has_line_info(with[0], 4));
}

/* The JIT with line info, through the fake driver: the option and
 * $TILEC_LINE_INFO=1 give other kernels than a plain compile (their own cache
 * entries), whose PTX the driver compiles with CU_JIT_GENERATE_LINE_INFO;
 * plain PTX without it. */
TEST(test_jit_line_info) {
    tc_context *ctx = NULL;
    void *cuda = NULL;
    const FakeLaunch *l = fake_context("tc_jit's line info", &ctx, &cuda);
    if (!l)
        return;
    tc_constexpr cx[] = {{"BLOCK", TC_CONSTEXPR_INT, 1024, 0}};
    tc_options opt;
    tc_options_init(&opt);
    tc_jit_request req;
    softmax_request(&req, "line_info.tile", cx);
    req.options = &opt;
    req.no_disk_cache = 1;
    tc_kernel *plain = NULL, *lines = NULL, *again = NULL;
    CHECK_EQ_INT(tc_jit(ctx, &req, &plain), TC_OK);
    CHECK_EQ_INT(l->line_info, 0);
    opt.line_info = 1;
    CHECK_EQ_INT(tc_jit(ctx, &req, &lines), TC_OK);
    CHECK(plain && lines && lines != plain);
    CHECK_EQ_INT(l->line_info, 1);
    CHECK_EQ_INT(tc_jit(ctx, &req, &again), TC_OK);
    CHECK(again == lines);
    opt.line_info = 0;
    CHECK_EQ_INT(tc_jit(ctx, &req, &again), TC_OK);
    CHECK(again == plain);
    CHECK_EQ_INT(tc_context_destroy(ctx), TC_OK);

    /* $TILEC_LINE_INFO=1: every compile; 0 leaves the request's; others are refused */
    char *old = getenv("TILEC_LINE_INFO") ? strdup(getenv("TILEC_LINE_INFO")) : NULL;
    setenv("TILEC_LINE_INFO", "1", 1);
    CHECK_EQ_INT(tc_context_create(0, &ctx), TC_OK);
    CHECK_EQ_INT(tc_jit(ctx, &req, &again), TC_OK);
    CHECK_EQ_INT(l->line_info, 1);
    CHECK_EQ_INT(tc_context_destroy(ctx), TC_OK);
    setenv("TILEC_LINE_INFO", "0", 1);
    CHECK_EQ_INT(tc_context_create(0, &ctx), TC_OK);
    CHECK_EQ_INT(tc_jit(ctx, &req, &again), TC_OK);
    CHECK_EQ_INT(l->line_info, 0);
    opt.line_info = 1;
    CHECK_EQ_INT(tc_jit(ctx, &req, &again), TC_OK);
    CHECK_EQ_INT(l->line_info, 1);
    CHECK_EQ_INT(tc_context_destroy(ctx), TC_OK);
    setenv("TILEC_LINE_INFO", "yes", 1);
    ctx = NULL;
    CHECK_EQ_INT(tc_context_create(0, &ctx), TC_ERROR_INVALID_ARGUMENT);
    CHECK(ctx == NULL && strstr(tc_last_error(), "TILEC_LINE_INFO=yes") != NULL);
    if (old)
        setenv("TILEC_LINE_INFO", old, 1);
    else
        unsetenv("TILEC_LINE_INFO");
    free(old);
    dlclose(cuda);
}

UNIT_SUITE(runtime, test_sha256_vectors, test_sha256_lengths, test_sha256_fields, test_cache_round_trip,
           test_cache_rejects_bad_entries, test_cache_io_errors, test_cache_dir_from_env, test_meta_round_trip,
           test_tensor_map_metadata, test_tensor_map_stride_multiplier, test_meta_tensor_maps, test_persistent_metadata, test_meta_persistent,
           test_signature, test_jit_keys, test_jit_build_and_cache,
           test_jit_rebuilds_unlinkable_ptx, test_jit_refused_cache_dir, test_compile_specialize_hook,
           test_jit_facts_during_compile, test_jit_parses_once, test_log_env, test_no_driver, test_null_arguments,
           test_arch_for_cc, test_launch_checks, test_launch_tensor_maps, test_launch_tensor_maps_driver,
           test_launch_persistent, test_launch_persistent_driver,
           test_aot_emit, test_aot_tensor_maps, test_aot_persistent, test_aot_errors, test_jit_whole_program_setmaxnreg,
           test_ptx_has_line_info, test_jit_line_info, test_aot_line_info)
