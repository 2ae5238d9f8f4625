/*
 * cache.c — the JIT's disk cache: one file per entry, content-addressed.
 *
 * An entry is named by its key (DIR/<64 hex digits>.entry) and holds one
 * payload, PTX or a cubin, with the kernel metadata a launch needs:
 *
 *     offset  size  field
 *          0     8  magic "TILECv1\0"
 *          8     4  format version (1), little-endian like every integer here
 *         12     4  payload kind: 1 = PTX, 2 = cubin
 *         16    32  key (SHA-256, see jit.c)
 *         48    32  checksum: SHA-256 of every byte from offset 96 to the end
 *         80     4  length of the compiler version, NUL included
 *         84     4  length of the metadata
 *         88     8  length of the payload
 *         96     …  compiler version (tc_version()), metadata (meta.c), payload
 *
 * Writers never expose a partial file: they write a temp file in the same
 * directory (".tmp-KEY-PID-RANDOM", so two processes never share one),
 * fsync it and rename it over the final name, which is atomic on POSIX
 * filesystems. Two processes that build the same key both rename a
 * complete, identical entry; readers see the old file or the new one.
 *
 * Readers trust nothing: a file that is short, has another magic, format,
 * kind, key or compiler, or whose checksum fails (a torn write on a crashed
 * NFS client, a disk error, a foreign file) is a miss. It is deleted, so the
 * rebuild that follows replaces it, and it is never loaded.
 */
#include "runtime/runtime.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

tc_status rt_cache_dir(char *out, size_t cap) {
    const char *dir = getenv("TILEC_CACHE_DIR");
    int n;
    if (dir && *dir) {
        n = snprintf(out, cap, "%s", dir);
    } else if ((dir = getenv("XDG_CACHE_HOME")) && *dir) {
        n = snprintf(out, cap, "%s/tilec", dir);
    } else if ((dir = getenv("HOME")) && *dir) {
        n = snprintf(out, cap, "%s/.cache/tilec", dir);
    } else {
        return rt_fail(TC_ERROR_IO, "no cache directory: set TILEC_CACHE_DIR (or HOME)");
    }
    if (n < 0 || (size_t)n >= cap)
        return rt_fail(TC_ERROR_IO, "cache directory path too long: %s", dir);
    return TC_OK;
}

tc_status rt_cache_path(const char *dir, const uint8_t key[32], char *out, size_t cap) {
    char hex[65];
    rt_hex(key, 32, hex);
    int n = snprintf(out, cap, "%s/%s.entry", dir, hex);
    if (n < 0 || (size_t)n >= cap)
        return rt_fail(TC_ERROR_IO, "cache path too long: %s/%s.entry", dir, hex);
    return TC_OK;
}

/* ---- encoding ---- */

static uint32_t get_u32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get_u64(const uint8_t *p) {
    return (uint64_t)get_u32(p) | (uint64_t)get_u32(p + 4) << 32;
}

bool rt_cache_encode(RtBytes *out, const uint8_t key[32], RtPayloadKind kind, const void *meta, size_t meta_len,
                     const void *payload, size_t payload_len) {
    const char *compiler = tc_version();
    size_t compiler_len = strlen(compiler) + 1;
    if (meta_len > UINT32_MAX)
        return false;
    RtSha256 h;
    rt_sha256_init(&h);
    rt_sha256_update(&h, compiler, compiler_len);
    rt_sha256_update(&h, meta, meta_len);
    rt_sha256_update(&h, payload, payload_len);
    uint8_t sum[32];
    rt_sha256_final(&h, sum);
    static const char magic[8] = RT_CACHE_MAGIC;
    return rt_bytes_append(out, magic, 8) && rt_bytes_u32(out, RT_CACHE_FORMAT_VERSION) &&
           rt_bytes_u32(out, (uint32_t)kind) && rt_bytes_append(out, key, 32) && rt_bytes_append(out, sum, 32) &&
           rt_bytes_u32(out, (uint32_t)compiler_len) && rt_bytes_u32(out, (uint32_t)meta_len) &&
           rt_bytes_u64(out, payload_len) && rt_bytes_append(out, compiler, compiler_len) &&
           rt_bytes_append(out, meta, meta_len) && rt_bytes_append(out, payload, payload_len);
}

static bool reject(uint8_t *data, char *why, size_t why_cap, const char *reason) {
    free(data);
    snprintf(why, why_cap, "%s", reason);
    return false;
}

bool rt_cache_decode(uint8_t *data, size_t len, const uint8_t key[32], RtPayloadKind kind, RtCacheEntry *e, char *why,
                     size_t why_cap) {
    memset(e, 0, sizeof *e);
    if (len < RT_CACHE_HEADER_SIZE)
        return reject(data, why, why_cap, "short file");
    if (memcmp(data, RT_CACHE_MAGIC, 8) != 0)
        return reject(data, why, why_cap, "bad magic: not a tilec cache entry");
    if (get_u32(data + 8) != RT_CACHE_FORMAT_VERSION)
        return reject(data, why, why_cap, "other format version");
    if (get_u32(data + 12) != (uint32_t)kind)
        return reject(data, why, why_cap, "other payload kind");
    if (memcmp(data + 16, key, 32) != 0)
        return reject(data, why, why_cap, "key mismatch");
    uint64_t compiler_len = get_u32(data + 80), meta_len = get_u32(data + 84), payload_len = get_u64(data + 88);
    uint64_t body = len - RT_CACHE_HEADER_SIZE;
    if (compiler_len > body || meta_len > body - compiler_len || payload_len != body - compiler_len - meta_len)
        return reject(data, why, why_cap, "lengths do not match the file size (truncated?)");
    const uint8_t *p = data + RT_CACHE_HEADER_SIZE;
    uint8_t sum[32];
    rt_sha256(p, (size_t)body, sum);
    if (memcmp(sum, data + 48, 32) != 0)
        return reject(data, why, why_cap, "checksum mismatch");
    if (compiler_len == 0 || p[compiler_len - 1] != 0 || strcmp((const char *)p, tc_version()) != 0)
        return reject(data, why, why_cap, "written by another compiler version");
    e->kind = kind;
    memcpy(e->key, key, 32);
    e->compiler = (const char *)p;
    e->meta = p + compiler_len;
    e->meta_len = (size_t)meta_len;
    e->payload = p + compiler_len + meta_len;
    e->payload_len = (size_t)payload_len;
    e->data = data;
    e->data_len = len;
    return true;
}

void rt_cache_entry_free(RtCacheEntry *e) {
    free(e->data);
    memset(e, 0, sizeof *e);
}

/* ---- files ---- */

/* mkdir -p */
static tc_status make_dirs(const char *dir) {
    char path[4096];
    size_t n = strlen(dir);
    if (n == 0 || n >= sizeof path)
        return rt_fail(TC_ERROR_IO, "bad cache directory '%s'", dir);
    memcpy(path, dir, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (path[i] != '/' && path[i] != 0)
            continue;
        char c = path[i];
        path[i] = 0;
        if (mkdir(path, 0777) != 0 && errno != EEXIST)
            return rt_fail(TC_ERROR_IO, "cannot create cache directory %s: %s", path, strerror(errno));
        path[i] = c;
    }
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return rt_fail(TC_ERROR_IO, "cache directory %s is not a directory", dir);
    return TC_OK;
}

static uint64_t random_u64(void) {
    uint64_t r;
    if (getrandom(&r, sizeof r, GRND_NONBLOCK) == (ssize_t)sizeof r)
        return r;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    static _Thread_local uint64_t counter;
    return ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)ts.tv_sec ^ (++counter << 40) ^ (uint64_t)(uintptr_t)&r;
}

static bool write_all(int fd, const uint8_t *p, size_t n) {
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        p += w;
        n -= (size_t)w;
    }
    return true;
}

tc_status rt_cache_store(const char *dir, const uint8_t key[32], RtPayloadKind kind, const void *meta, size_t meta_len,
                         const void *payload, size_t payload_len) {
    char path[4096], tmp[4200], hex[65];
    tc_status st = rt_cache_path(dir, key, path, sizeof path);
    if (st != TC_OK)
        return st;
    if ((st = make_dirs(dir)) != TC_OK)
        return st;
    RtBytes bytes = {0};
    if (!rt_cache_encode(&bytes, key, kind, meta, meta_len, payload, payload_len)) {
        rt_bytes_free(&bytes);
        return rt_fail(TC_ERROR_OUT_OF_MEMORY, "out of memory encoding cache entry %s", path);
    }
    rt_hex(key, 32, hex);
    snprintf(tmp, sizeof tmp, "%s/.tmp-%.16s-%ld-%016llx", dir, hex, (long)getpid(), (unsigned long long)random_u64());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
        rt_bytes_free(&bytes);
        return rt_fail(TC_ERROR_IO, "cannot create %s: %s", tmp, strerror(errno));
    }
    bool ok = write_all(fd, bytes.data, bytes.len) && fsync(fd) == 0;
    int err = errno;
    if (close(fd) != 0 && ok) {
        ok = false;
        err = errno;
    }
    rt_bytes_free(&bytes);
    if (!ok) {
        unlink(tmp);
        return rt_fail(TC_ERROR_IO, "cannot write %s: %s", tmp, strerror(err));
    }
    if (rename(tmp, path) != 0) {
        err = errno;
        unlink(tmp);
        return rt_fail(TC_ERROR_IO, "cannot rename %s to %s: %s", tmp, path, strerror(err));
    }
    return TC_OK;
}

/* Deletes a rejected entry, unless another process has replaced it since we
 * opened it (then the new file is left alone). */
static void remove_if_same(const char *path, const struct stat *opened) {
    struct stat now;
    if (stat(path, &now) == 0 && now.st_dev == opened->st_dev && now.st_ino == opened->st_ino)
        unlink(path);
}

tc_status rt_cache_load(const char *dir, const uint8_t key[32], RtPayloadKind kind, RtCacheEntry *e, bool *hit,
                        char *why, size_t why_cap) {
    memset(e, 0, sizeof *e);
    *hit = false;
    if (why_cap)
        why[0] = 0;
    char path[4096];
    tc_status st = rt_cache_path(dir, key, path, sizeof path);
    if (st != TC_OK)
        return st;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT || errno == ENOTDIR)
            return TC_OK;
        return rt_fail(TC_ERROR_IO, "cannot open %s: %s", path, strerror(errno));
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int err = errno;
        close(fd);
        return rt_fail(TC_ERROR_IO, "cannot stat %s: %s", path, strerror(err));
    }
    if (!S_ISREG(sb.st_mode) || sb.st_size > (off_t)RT_CACHE_MAX_ENTRY) {
        close(fd);
        snprintf(why, why_cap, "not a regular file of plausible size");
        if (S_ISREG(sb.st_mode))
            remove_if_same(path, &sb);
        return TC_OK;
    }
    size_t size = (size_t)sb.st_size;
    uint8_t *data = malloc(size + 1); /* + a NUL, so that a PTX payload is a C string */
    if (!data) {
        close(fd);
        return rt_fail(TC_ERROR_OUT_OF_MEMORY, "out of memory reading %s", path);
    }
    size_t got = 0;
    while (got < size) {
        ssize_t r = read(fd, data + got, size - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int err = errno;
            free(data);
            close(fd);
            return rt_fail(TC_ERROR_IO, "cannot read %s: %s", path, strerror(err));
        }
        if (r == 0)
            break; /* shrank while we read: decode rejects it */
        got += (size_t)r;
    }
    close(fd);
    data[got] = 0;
    if (!rt_cache_decode(data, got, key, kind, e, why, why_cap)) {
        remove_if_same(path, &sb);
        return TC_OK;
    }
    *hit = true;
    return TC_OK;
}
