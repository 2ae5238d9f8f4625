/*
 * target.c — the targets tilec compiles for and what each allows.
 */
#include "target.h"

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
        return t->arch_a ? "+ptx80" : "+ptx78";
    return "+ptx70";
}
