/* SHA-256 (FIPS 180-4), for the compile cache's content keys. */
#ifndef SMELT_CODEGEN_SHA256_H
#define SMELT_CODEGEN_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct cg_sha256 {
    uint32_t h[8];
    uint64_t total;      /* bytes hashed so far */
    unsigned char block[64];
    size_t used;         /* bytes in block */
} cg_sha256;

void cg_sha256_init(cg_sha256 *s);
void cg_sha256_update(cg_sha256 *s, const void *data, size_t n);
void cg_sha256_final(cg_sha256 *s, unsigned char digest[32]);
/* Lower-case hex of the digest: 64 characters + NUL. */
void cg_sha256_hex(const unsigned char digest[32], char hex[65]);

#endif
