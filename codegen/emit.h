/*
 * emit.h — the NVPTX back end as lower.c uses it (internal to codegen/): LLVM's
 * NVPTX target, tilec's LLVM pipeline, and PTX emission (emit.c).
 */
#ifndef TILEC_CODEGEN_EMIT_H
#define TILEC_CODEGEN_EMIT_H

#include "codegen.h"

#include <llvm-c/Core.h>

/* Initializes LLVM's NVPTX target once per process (thread-safe); false and
 * *why when this LLVM has no NVPTX back end. */
bool cg_target_init(const char **why);
/* Verifies the module, optimizes it and prints LLVM IR or PTX into out. */
/* The string attribute of a kernel whose programs form clusters of that
 * many along x (its cluster_reduce ops): the PTX entry gets
 * .reqnctapercluster N, 1, 1. */
#define CG_CLUSTER_ATTR "tilec-cluster-ctas"

bool cg_emit_module(LLVMModuleRef mod, const TgTarget *t, CgEmit emit, Buf *out, DiagList *diags, CgStats *stats);

#endif
