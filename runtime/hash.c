/*
 * hash.c — SHA-256 (FIPS 180-4), for JIT cache keys and entry checksums.
 *
 * A key must change whenever anything that affects the generated code
 * changes, and two different inputs must never share an entry: a
 * cryptographic hash makes collisions a non-issue even for a cache shared
 * by many users on one filesystem. SHA-256 is the plain, well-tested
 * choice; the inputs are small (a source file, a few options), so its speed
 * does not matter next to a compile. tests/unit/test_runtime.c checks the
 * FIPS test vectors.
 *
 * Keys are built from tagged, length-prefixed fields (rt_sha256_field), so
 * that ("ab", "c") and ("a", "bc") hash differently.
 */
#include "runtime/runtime.h"

#include <string.h>

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static uint32_t ror(uint32_t x, int n) {
    return (x >> n) | (x << (32 - n));
}

static void compress(uint32_t s[8], const uint8_t *p) {
    uint32_t w[64];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = s[0], b = s[1], c = s[2], d = s[3], e = s[4], f = s[5], g = s[6], h = s[7];
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = h + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i];
        uint32_t t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        h = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    s[0] += a;
    s[1] += b;
    s[2] += c;
    s[3] += d;
    s[4] += e;
    s[5] += f;
    s[6] += g;
    s[7] += h;
}

void rt_sha256_init(RtSha256 *h) {
    static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(h->state, iv, sizeof iv);
    h->bytes = 0;
    h->block_len = 0;
}

void rt_sha256_update(RtSha256 *h, const void *data, size_t len) {
    if (!len)
        return;
    const uint8_t *p = data;
    h->bytes += len;
    if (h->block_len) {
        size_t n = 64 - h->block_len < len ? 64 - h->block_len : len;
        memcpy(h->block + h->block_len, p, n);
        h->block_len += n;
        p += n;
        len -= n;
        if (h->block_len < 64)
            return;
        compress(h->state, h->block);
        h->block_len = 0;
    }
    for (; len >= 64; p += 64, len -= 64)
        compress(h->state, p);
    memcpy(h->block, p, len);
    h->block_len = len;
}

void rt_sha256_final(RtSha256 *h, uint8_t digest[32]) {
    uint64_t bits = h->bytes * 8;
    uint8_t pad[72] = {0x80};
    size_t pad_len = (h->block_len < 56 ? 56 : 120) - h->block_len;
    for (int i = 0; i < 8; i++)
        pad[pad_len + (size_t)i] = (uint8_t)(bits >> (56 - 8 * i));
    rt_sha256_update(h, pad, pad_len + 8);
    for (int i = 0; i < 8; i++) {
        digest[4 * i] = (uint8_t)(h->state[i] >> 24);
        digest[4 * i + 1] = (uint8_t)(h->state[i] >> 16);
        digest[4 * i + 2] = (uint8_t)(h->state[i] >> 8);
        digest[4 * i + 3] = (uint8_t)h->state[i];
    }
}

void rt_sha256(const void *data, size_t len, uint8_t digest[32]) {
    RtSha256 h;
    rt_sha256_init(&h);
    rt_sha256_update(&h, data, len);
    rt_sha256_final(&h, digest);
}

void rt_sha256_field(RtSha256 *h, const char *tag, const void *data, size_t len) {
    uint8_t n[9];
    size_t tag_len = strlen(tag);
    n[0] = (uint8_t)tag_len;
    rt_sha256_update(h, n, 1);
    rt_sha256_update(h, tag, tag_len);
    for (int i = 0; i < 8; i++)
        n[i] = (uint8_t)((uint64_t)len >> (8 * i));
    rt_sha256_update(h, n, 8);
    rt_sha256_update(h, data, len);
}

void rt_sha256_field_str(RtSha256 *h, const char *tag, const char *s) {
    if (!s) {
        rt_sha256_field(h, tag, "\xff(null)", 7);
        return;
    }
    rt_sha256_field(h, tag, s, strlen(s));
}

void rt_sha256_field_i64(RtSha256 *h, const char *tag, int64_t v) {
    uint8_t le[8];
    for (int i = 0; i < 8; i++)
        le[i] = (uint8_t)((uint64_t)v >> (8 * i));
    rt_sha256_field(h, tag, le, 8);
}

void rt_hex(const uint8_t *bytes, size_t n, char *out) {
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[bytes[i] >> 4];
        out[2 * i + 1] = digits[bytes[i] & 15];
    }
    out[2 * n] = 0;
}
