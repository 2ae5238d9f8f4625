/*
 * target.c — the targets tilec compiles for and what each allows.
 */
#include "target.h"

#include <string.h>

bool tg_target_init(TgTarget *t, const char *arch) {
    if (!arch)
        arch = TC_DEFAULT_ARCH;
    int sm = strcmp(arch, "sm_80") == 0 ? 80 : strcmp(arch, "sm_90") == 0 || strcmp(arch, "sm_90a") == 0 ? 90 : 0;
    if (!sm)
        return false;
    memset(t, 0, sizeof *t);
    t->sm = sm;
    t->arch_a = strcmp(arch, "sm_90a") == 0;
    t->num_warps = TC_DEFAULT_NUM_WARPS;
    t->num_stages = TC_DEFAULT_NUM_STAGES;
    t->threads_per_warp = 32;
    return true;
}

void tg_target_set_options(TgTarget *t, int num_warps, int num_stages, bool llvm_o3) {
    if (num_warps > 0)
        t->num_warps = num_warps;
    if (num_stages > 0)
        t->num_stages = num_stages;
    t->llvm_o3 = llvm_o3;
}

int64_t tg_shared_limit(const TgTarget *t) {
    return t->sm >= 90 ? 227 * 1024 : 163 * 1024;
}

const char *tg_target_cpu(const TgTarget *t) {
    if (t->sm >= 90)
        return t->arch_a ? "sm_90a" : "sm_90";
    return "sm_80";
}

const char *tg_target_features(const TgTarget *t) {
    if (t->sm >= 90)
        return t->arch_a ? "+ptx81" : "+ptx78";
    return "+ptx70";
}
