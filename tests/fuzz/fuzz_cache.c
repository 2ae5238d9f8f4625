/*
 * fuzz_cache.c — libFuzzer target for the JIT disk cache's reader.
 *
 * Each input becomes the file DIR/<key>.entry of a private temporary
 * directory, which rt_cache_load then reads for a fixed key; the metadata
 * of a hit goes through rt_meta_decode. The first byte says how:
 *
 *   even: the rest of the input is the file, as it is;
 *   odd:  the rest describes an entry that rt_cache_encode builds (a payload
 *         kind, metadata and payload of lengths and bytes taken from the
 *         input), and then damage to do to it: each 4-byte group of the tail
 *         truncates, flips a bit, overwrites a byte or appends one.
 *
 * and its second bit, which kind of payload the load asks for.
 *
 * Raw files exercise the validation against garbage; forged ones pass the
 * checksum (or fail it by one bit) and reach the length, compiler and
 * metadata checks. An undamaged forged entry must be a hit with exactly
 * the encoded payload and metadata; any crash, sanitizer report or leak is
 * a bug.
 *
 * With TILEC_FUZZ_CACHE_SEEDS=DIR, LLVMFuzzerInitialize first writes a few
 * seed inputs there (real entries with real kernel metadata, raw and
 * forged), so that a run starts from entries that load (tests/fuzz/run.sh).
 */
#include "runtime/runtime.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[512];
static char entry[700];
static uint8_t key[32];

static void cleanup(void) {
    char stats[600];
    snprintf(stats, sizeof stats, "%s/stats", dir);
    unlink(entry);
    unlink(stats);
    rmdir(dir);
}

static void write_file(const char *path, const void *p, size_t n) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        perror(path);
        abort();
    }
    if (n && write(fd, p, n) != (ssize_t)n) {
        perror(path);
        abort();
    }
    close(fd);
}

/* Two kernels' worth of real metadata, for the seeds. */
static void sample_meta(RtBytes *out) {
    static const tc_param_desc params[] = {
        {"out", TC_DTYPE_F16, 1, 0}, {"x", TC_DTYPE_F16, 1, 1}, {"stride", TC_DTYPE_I64, 0, 0}, {"n", TC_DTYPE_I32, 0, 0}};
    static const tc_kernel_desc kernels[] = {{"softmax", 4, 0, 4, params, 0, NULL, 0},
                                             {"scale", 8, 1024, 2, params + 2, 0, NULL, 0}};
    RtMeta m;
    if (rt_meta_copy(kernels, 2, &m) != TC_OK || !rt_meta_encode(&m, out))
        abort();
    rt_meta_free(&m);
}

static void write_seed(const char *seeds, const char *name, uint8_t mode, const void *p, size_t n) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", seeds, name);
    uint8_t *buf = malloc(n + 1);
    buf[0] = mode;
    memcpy(buf + 1, p, n);
    write_file(path, buf, n + 1);
    free(buf);
}

static void put_u16(RtBytes *b, size_t v) {
    uint8_t le[2] = {(uint8_t)v, (uint8_t)(v >> 8)};
    rt_bytes_append(b, le, 2);
}

static void write_seeds(const char *seeds) {
    static const char ptx[] = "//\n.version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry softmax()\n{\n"
                              "\tret;\n}\n";
    RtBytes meta = {0}, e = {0}, forged = {0};
    sample_meta(&meta);
    rt_cache_encode(&e, key, RT_PAYLOAD_PTX, meta.data, meta.len, ptx, sizeof ptx - 1);
    write_seed(seeds, "raw-ptx", 0, e.data, e.len);
    rt_bytes_free(&e);
    rt_cache_encode(&e, key, RT_PAYLOAD_CUBIN, meta.data, meta.len, "\x7f" "ELF\2\1\1", 7);
    write_seed(seeds, "raw-cubin", 2, e.data, e.len);
    rt_bytes_free(&e);
    /* forged: kind byte, u16 meta length, meta, u16 payload length, payload, damage */
    put_u16(&forged, 0); /* written as PTX */
    put_u16(&forged, meta.len);
    rt_bytes_append(&forged, meta.data, meta.len);
    put_u16(&forged, sizeof ptx - 1);
    rt_bytes_append(&forged, ptx, sizeof ptx - 1);
    write_seed(seeds, "forged-ptx", 1, forged.data, forged.len);
    rt_bytes_append(&forged, "\x01\x40\x00\x08", 4); /* flip a bit at 64 */
    write_seed(seeds, "forged-flip", 1, forged.data, forged.len);
    rt_bytes_free(&forged);
    rt_bytes_free(&meta);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    rt_sha256("fuzz_cache", 10, key);
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/tilec-fuzz-cache-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        perror(dir);
        abort();
    }
    if (rt_cache_path(dir, key, entry, sizeof entry) != TC_OK)
        abort();
    atexit(cleanup);
    const char *seeds = getenv("TILEC_FUZZ_CACHE_SEEDS");
    if (seeds && *seeds)
        write_seeds(seeds);
    return 0;
}

typedef struct Reader {
    const uint8_t *p;
    size_t n;
} Reader;

static size_t take_u16(Reader *r) {
    size_t v = 0;
    for (int i = 0; i < 2 && r->n; i++, r->p++, r->n--)
        v |= (size_t)r->p[0] << (8 * i);
    return v;
}

static const uint8_t *take(Reader *r, size_t *n) {
    if (*n > r->n)
        *n = r->n;
    const uint8_t *p = r->p;
    r->p += *n;
    r->n -= *n;
    return p;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0)
        return 0;
    RtPayloadKind kind = (data[0] & 2) ? RT_PAYLOAD_CUBIN : RT_PAYLOAD_PTX;
    const uint8_t *meta = NULL, *payload = NULL;
    size_t meta_len = 0, payload_len = 0;
    bool intact = false;
    if (!(data[0] & 1)) {
        write_file(entry, data + 1, size - 1);
    } else {
        Reader r = {data + 1, size - 1};
        RtPayloadKind written = (take_u16(&r) & 1) ? RT_PAYLOAD_CUBIN : RT_PAYLOAD_PTX;
        meta_len = take_u16(&r);
        meta = take(&r, &meta_len);
        payload_len = take_u16(&r);
        payload = take(&r, &payload_len);
        RtBytes e = {0};
        if (!rt_cache_encode(&e, key, written, meta, meta_len, payload, payload_len))
            abort();
        intact = written == kind && r.n < 4;
        for (; r.n >= 4; r.p += 4, r.n -= 4) {
            size_t at = ((size_t)r.p[1] | (size_t)r.p[2] << 8) % (e.len + 1);
            switch (r.p[0] & 3) {
            case 0: e.len = at; break; /* truncate */
            case 1:
                if (at < e.len)
                    e.data[at] ^= (uint8_t)(1u << (r.p[3] & 7));
                break;
            case 2:
                if (at < e.len)
                    e.data[at] = r.p[3];
                break;
            default: rt_bytes_u8(&e, r.p[3]); break;
            }
        }
        write_file(entry, e.data, e.len);
        rt_bytes_free(&e);
    }
    RtCacheEntry e;
    bool hit = false;
    char why[256];
    tc_status st = rt_cache_load(dir, key, kind, &e, &hit, why, sizeof why);
    if (st != TC_OK) {
        fprintf(stderr, "fuzz_cache: rt_cache_load failed on a regular file: %s\n", tc_last_error());
        __builtin_trap();
    }
    if (intact && !hit) {
        fprintf(stderr, "fuzz_cache: an undamaged entry was rejected: %s\n", why);
        __builtin_trap();
    }
    if (hit) {
        if (intact && (e.meta_len != meta_len || e.payload_len != payload_len ||
                       (meta_len && memcmp(e.meta, meta, meta_len) != 0) ||
                       (payload_len && memcmp(e.payload, payload, payload_len) != 0) ||
                       e.payload[e.payload_len] != 0)) {
            fprintf(stderr, "fuzz_cache: a hit returned other bytes than were stored\n");
            __builtin_trap();
        }
        RtMeta m;
        if (rt_meta_decode(e.meta, e.meta_len, &m)) {
            for (size_t k = 0; k < m.num_kernels; k++)
                if (!m.kernels[k].name || (m.kernels[k].num_params && !m.kernels[k].params))
                    __builtin_trap();
            rt_meta_free(&m);
        }
        rt_cache_entry_free(&e);
    }
    unlink(entry);
    return 0;
}
