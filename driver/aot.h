/*
 * aot.h — the AOT launcher generator's internals (include/tilec/aot.h is the
 * public side): the emitter takes compiled images and writes the C text, so
 * that tests can drive it with hand-written PTX.
 */
#ifndef TILEC_CODEGEN_AOT_H
#define TILEC_CODEGEN_AOT_H

#include "ir/ir.h"
#include "driver/kernel_meta.h"

typedef struct CgAotImage CgAotImage;
typedef struct CgAotInput CgAotInput;

/* One target's code. */
struct CgAotImage {
    const char *arch; /* "sm_80", "sm_90", "sm_90a" */
    const char *ptx;
    size_t ptx_len;
    const uint8_t *cubin; /* NULL: PTX only */
    size_t cubin_len;
    const RtMeta *meta; /* num_warps and shared memory of each kernel, in sig's order */
};

struct CgAotInput {
    const char *name;           /* C prefix */
    const char *header_name;    /* #include "..." in the .c */
    const char *source_name;    /* for the comments */
    const char *specialization; /* "BLOCK=1024, SINGLE_TILE=true", or "" */
    const RtMeta *sig;          /* names, types and const-ness of the parameters */
    const CgAotImage *images;
    size_t num_images;
    bool line_info; /* the PTX has line info (tilec -g): NAME_LINE_INFO, which the loader passes the driver */
};

/* Writes NAME.h and NAME.c. Allocates through Buf (tc_oom on failure): call
 * under a TcGuard. */
void cg_aot_emit(const CgAotInput *in, Buf *header, Buf *source);

/* "sm_90a" -> 90, exact = true; "sm_80" -> 80, exact = false; 0 if not a target. */
int cg_aot_arch_cc(const char *arch, bool *exact);

#endif
