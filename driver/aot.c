/*
 * aot.c — ahead-of-time compilation to a C launcher (tilec --aot).
 *
 * tc_aot_generate compiles the kernels of a source once per target to PTX,
 * turns each PTX into a cubin with ptxas when ptxas is on the machine (run
 * as a subprocess; without it the launcher carries PTX only, which the
 * driver compiles at load time), and writes two files:
 *
 *   NAME.h  the API: NAME_load / NAME_unload / NAME_last_error / NAME_image
 *           and one typed launch function per kernel, NAME_KERNEL(stream,
 *           arguments..., grid), documented with the kernel's signature.
 *   NAME.c  the images as C data (PTX as string literals, one per line so a
 *           reader can find a kernel; cubins as bytes), a table saying which
 *           image serves which compute capability and each kernel's block
 *           size, shared memory and tensor maps per image, a small dlopen
 *           loader for the driver functions it calls, and the launchers.
 *
 * Tensor maps: a kernel compiled for sm_90a may take TMA tensor maps after
 * its arguments (tc_tensor_map_desc); the launcher builds them at each
 * launch from the arguments, by the runtime's rules, with the image's own
 * table of them (the sm_80 image has none, so the same kernel takes more
 * parameters in one image than in another).
 *
 * Why a dlopen loader in every launcher rather than a call into libtilec:
 * libtilec carries LLVM (25 MB); a deployed program should need neither it
 * nor a toolkit, and a launcher that links libcuda directly would not even
 * start on a machine without a driver. The generated code depends on
 * tilec's headers only (for tc_status, tc_dim3 and the CUDA handle types),
 * returns a status from every function, and never exits.
 *
 * Persistent kernels: a kernel the pipeline made persistent
 * (tc_kernel_desc.persistent) takes the grid after its arguments, as three
 * int32_t, and loops over it; the launcher passes them (before the tensor
 * maps) and starts only as many programs as the device holds at once,
 * which the loader counts per kernel when it loads the image (the
 * occupancy calculator's programs per multiprocessor times the
 * multiprocessors). As with tensor maps, the image's table says which of
 * its kernels are persistent.
 *
 * Arguments: pointers are `void *` (`const void *` for `const T*`), so a
 * CUdeviceptr, a cudaMalloc'ed pointer or a torch data_ptr passes with a
 * cast; i32/i64/f32/f64 as int32_t/int64_t/float/double; f16 and bf16 as
 * uint16_t bits, f8e4m3 and f8e5m2 as uint8_t bits; i8/i16 as
 * int8_t/int16_t and i1 as bool. Arguments narrower
 * than 32 bits travel in 32-bit temporaries, correct whether the PTX
 * declares the parameter at its own width or promoted.
 */
#include "tilec/aot.h"

#include "driver/aot.h"
#include "target/target.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

struct tc_aot_output {
    Buf header;
    Buf source;
    Buf notes;
};

int cg_aot_arch_cc(const char *arch, bool *exact) {
    TgTarget t;
    *exact = false;
    if (!arch || !tg_target_init(&t, arch))
        return 0;
    *exact = t.arch_a; /* sm_90a code runs on compute capability 9.0 only */
    return t.sm;
}

static bool is_identifier(const char *s) {
    if (!s || !*s || (*s >= '0' && *s <= '9'))
        return false;
    for (; *s; s++)
        if (!(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9')))
            return false;
    return true;
}

/* ---- emitting C ---- */

/* A parameter name usable in C: C and C++ keywords, the launcher's own
 * names (stream, grid) and the tc_ prefix get a trailing underscore. */
static const char *c_param_name(Arena *a, const char *name) {
    static const char *const reserved[] = {
        "auto",         "break",    "case",      "char",     "const",     "continue",  "default",  "do",
        "double",       "else",     "enum",      "extern",   "float",     "for",       "goto",     "if",
        "inline",       "int",      "long",      "register", "restrict",  "return",    "short",    "signed",
        "sizeof",       "static",   "struct",    "switch",   "typedef",   "union",     "unsigned", "void",
        "volatile",     "while",    "bool",      "true",     "false",     "alignas",   "alignof",  "class",
        "delete",       "new",      "namespace", "operator", "private",   "protected", "public",   "template",
        "this",         "throw",    "try",       "catch",    "typename",  "virtual",   "using",    "friend",
        "mutable",      "explicit", "export",    "nullptr",  "constexpr", "decltype",  "noexcept", "static_assert",
        "thread_local", "stream",   "grid",      "NULL"};
    bool clash = strncmp(name, "tc_", 3) == 0 || name[0] == '_';
    for (size_t i = 0; !clash && i < sizeof reserved / sizeof reserved[0]; i++)
        clash = strcmp(name, reserved[i]) == 0;
    return clash ? arena_printf(a, "%s_", name) : name;
}

static const char *c_type(const tc_param_desc *p) {
    if (p->is_pointer)
        return p->is_const ? "const void *" : "void *";
    switch (p->dtype) {
    case TC_DTYPE_I1: return "bool ";
    case TC_DTYPE_I8: return "int8_t ";
    case TC_DTYPE_I16: return "int16_t ";
    case TC_DTYPE_I32: return "int32_t ";
    case TC_DTYPE_I64: return "int64_t ";
    case TC_DTYPE_F16:
    case TC_DTYPE_BF16: return "uint16_t ";
    case TC_DTYPE_F32: return "float ";
    case TC_DTYPE_F64: return "double ";
    case TC_DTYPE_F8E4M3:
    case TC_DTYPE_F8E5M2: return "uint8_t ";
    }
    return "int ";
}

/* A float scalar passed as its bits: f16, bf16, f8e4m3, f8e5m2. */
static bool fp_bits_param(const tc_param_desc *q) {
    return !q->is_pointer && (q->dtype == TC_DTYPE_F16 || q->dtype == TC_DTYPE_BF16 || q->dtype == TC_DTYPE_F8E4M3 ||
                              q->dtype == TC_DTYPE_F8E5M2);
}

/* The parameter as the source declares it: "const f16* x", "i64 stride". */
static void tile_param(Buf *b, const tc_param_desc *p) {
    buf_printf(b, "%s%s%s %s", p->is_pointer && p->is_const ? "const " : "", rt_dtype_name(p->dtype),
               p->is_pointer ? "*" : "", p->name);
}

/* A string literal per line of text; escapes quotes, backslashes, control
 * bytes and "??" (trigraphs, in strict C modes). */
static void emit_string(Buf *b, const char *text, size_t len) {
    if (!len) {
        buf_puts(b, "    \"\"");
        return;
    }
    size_t i = 0;
    while (i < len) {
        buf_puts(b, "    \"");
        for (; i < len; i++) {
            unsigned char c = (unsigned char)text[i];
            if (c == '\n') {
                buf_puts(b, "\\n");
                i++;
                break;
            } else if (c == '"' || c == '\\') {
                buf_printf(b, "\\%c", c);
            } else if (c == '?' && i + 1 < len && text[i + 1] == '?') {
                buf_puts(b, "?\\");
            } else if (c == '\t') {
                buf_puts(b, "\\t");
            } else if (c < 32 || c >= 127) {
                buf_printf(b, "\\%03o", c);
            } else {
                buf_append(b, (const char *)&c, 1);
            }
        }
        buf_puts(b, i < len ? "\"\n" : "\"");
    }
}

static void emit_bytes(Buf *b, const uint8_t *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        buf_printf(b, "%s0x%02x,", i % 16 == 0 ? "\n    " : " ", p[i]);
    buf_puts(b, "\n");
}

/* The loader, the same for every launcher but for its prefix: the text of
 * driver/aot/loader.c (embedded by the build), from its marker line on,
 * with "tcaot" for NAME. */
extern const char cg_aot_loader_text[];
extern const size_t cg_aot_loader_text_len;

static void emit_loader(Buf *b, const char *name) {
    static const char marker[] = "/* ---- the CUDA driver", prefix[] = "tcaot";
    const char *p = strstr(cg_aot_loader_text, marker);
    if (!p)
        p = cg_aot_loader_text;
    for (const char *at; (at = strstr(p, prefix)); p = at + sizeof prefix - 1) {
        buf_append(b, p, (size_t)(at - p));
        buf_puts(b, name);
    }
    buf_puts(b, p);
}

/* Images in order of preference: cubins before PTX, newer targets first. */
static int image_rank(const CgAotImage *img, bool cubin) {
    bool exact;
    int cc = cg_aot_arch_cc(img->arch, &exact);
    return (cubin ? 0 : 1000) - cc * 2 - exact;
}

/* The most tensor maps kernel `name` takes in any image. */
static size_t kernel_max_maps(const CgAotInput *in, const char *name) {
    size_t most = 0;
    for (size_t i = 0; i < in->num_images; i++) {
        const tc_kernel_desc *m = rt_meta_find(in->images[i].meta, name);
        if (m && m->num_tensor_maps > most)
            most = m->num_tensor_maps;
    }
    return most;
}

/* Whether kernel `name` is persistent in any image. */
static bool kernel_any_persistent(const CgAotInput *in, const char *name) {
    for (size_t i = 0; i < in->num_images; i++) {
        const tc_kernel_desc *m = rt_meta_find(in->images[i].meta, name);
        if (m && m->persistent)
            return true;
    }
    return false;
}

/* The most hidden arguments kernel `name` takes in any image after its
 * runtime ones: the grid of a persistent kernel (3) and its tensor maps. */
static size_t kernel_max_hidden(const CgAotInput *in, const char *name) {
    size_t most = 0;
    for (size_t i = 0; i < in->num_images; i++) {
        const tc_kernel_desc *m = rt_meta_find(in->images[i].meta, name);
        size_t n = m ? (m->persistent ? 3 : 0) + m->num_tensor_maps : 0;
        most = n > most ? n : most;
    }
    return most;
}

/* Bytes of the launch argument a map reads an extent or stride from: the
 * launchers pass i8 and i16 in 32-bit temporaries. */
static unsigned arg_bytes(const tc_kernel_desc *d, int param) {
    return param < 0 ? 0 : d->params[param].dtype == TC_DTYPE_I64 ? 8 : 4;
}

/* Image i's table of the tensor maps of kernel d (d's description in that
 * image, which has some). */
static void emit_maps(Buf *c, const char *name, size_t i, size_t k, const tc_kernel_desc *d) {
    buf_printf(c, "\n/* %s: tensor maps of image %zu */\nstatic const struct %s_tensor_map %s_maps_%zu_%zu[] = {\n",
               d->name, i, name, name, i, k);
    for (size_t j = 0; j < d->num_tensor_maps; j++) {
        const tc_tensor_map_desc *m = &d->tensor_maps[j];
        const tc_param_desc *base = &d->params[m->base];
        buf_printf(c, "    {\"%s\", %d, %d, %zu, %d, {", base->name, m->base, rt_tensor_map_dtype(base->dtype),
                   rt_dtype_size(base->dtype), m->rank);
        for (int x = 0; x < m->rank; x++)
            buf_printf(c, "%s%d", x ? ", " : "", m->dim_param[x]);
        buf_puts(c, "}, {");
        for (int x = 0; x < m->rank; x++)
            buf_printf(c, "%s%u", x ? ", " : "", arg_bytes(d, m->dim_param[x]));
        buf_puts(c, "}, {");
        for (int x = 0; x < m->rank; x++)
            buf_printf(c, "%s%lld", x ? ", " : "", (long long)m->dim[x]);
        buf_puts(c, "}, {-1");
        for (int x = 1; x < m->rank; x++)
            buf_printf(c, ", %d", m->stride_param[x]);
        buf_puts(c, "}, {0");
        for (int x = 1; x < m->rank; x++)
            buf_printf(c, ", %u", arg_bytes(d, m->stride_param[x]));
        buf_puts(c, "}, {0");
        for (int x = 1; x < m->rank; x++)
            buf_printf(c, ", %lld", (long long)m->stride[x]);
        buf_puts(c, "}, {");
        for (int x = 0; x < m->rank; x++)
            buf_printf(c, "%s%u", x ? ", " : "", m->box[x]);
        buf_printf(c, "}, %d},\n", rt_tensor_map_swizzle(m->swizzle));
    }
    buf_puts(c, "};\n");
}

typedef struct Slot {
    const CgAotImage *img;
    size_t index; /* of img in the input */
    bool cubin;
} Slot;

/* The columns of an image's row in NAME_images after its image: per
 * kernel of the signature, in its order, what that image's description of
 * it says. */
typedef enum Column { COL_BLOCK, COL_SHARED, COL_NUM_MAPS, COL_MAPS, COL_PERSISTENT } Column;

static void emit_column(Buf *c, const char *name, const RtMeta *sig, const Slot *slot, Column col) {
    buf_puts(c, ", {");
    for (size_t k = 0; k < sig->num_kernels; k++) {
        const tc_kernel_desc *m = rt_meta_find(slot->img->meta, sig->kernels[k].name);
        const char *sep = k ? ", " : "";
        switch (col) {
        case COL_BLOCK: buf_printf(c, "%s%d", sep, 32 * (m ? m->num_warps : sig->kernels[k].num_warps)); break;
        case COL_SHARED: buf_printf(c, "%s%zu", sep, m ? m->shared_bytes : 0); break;
        case COL_NUM_MAPS: buf_printf(c, "%s%zu", sep, m ? m->num_tensor_maps : 0); break;
        case COL_MAPS:
            if (m && m->num_tensor_maps)
                buf_printf(c, "%s%s_maps_%zu_%zu", sep, name, slot->index, k);
            else
                buf_printf(c, "%sNULL", sep);
            break;
        case COL_PERSISTENT: buf_printf(c, "%s%d", sep, m && m->persistent ? 1 : 0); break;
        }
    }
    buf_puts(c, "}");
}

void cg_aot_emit(const CgAotInput *in, Buf *h, Buf *c) {
    const char *name = in->name;
    const RtMeta *sig = in->sig;
    Arena a;
    arena_init(&a);
    Buf targets;
    buf_init(&targets);
    TcGuard g;
    if (TC_GUARD(g)) { /* free what is ours, then pass the error on */
        arena_free(&a);
        buf_free(&targets);
        if (g.code == 1)
            tc_oom();
        tc_fatal(__FILE__, __LINE__, "%s", g.message);
    }

    for (size_t i = 0; i < in->num_images; i++)
        buf_printf(&targets, "%s%s (PTX%s)", i ? ", " : "", in->images[i].arch, in->images[i].cubin ? ", cubin" : "");
    size_t max_maps = 1;
    for (size_t k = 0; k < sig->num_kernels; k++) {
        size_t n = kernel_max_maps(in, sig->kernels[k].name);
        max_maps = n > max_maps ? n : max_maps;
    }

    /* ---- NAME.h ---- */
    char *guard = arena_printf(&a, "%s_TILEC_AOT_H", name);
    for (char *p = guard; *p; p++)
        if (*p >= 'a' && *p <= 'z')
            *p = (char)(*p - 'a' + 'A');
    buf_printf(h,
               "/*\n"
               " * %s.h - launchers for %s, generated by %s. Do not edit.\n"
               " *\n"
               " * Specialization: %s\n"
               " * Targets: %s\n"
               " *\n"
               " * Call %s_load once: it loads the code into a CUDA context (NULL: the one\n"
               " * current on the calling thread, else device 0's primary context, which it\n"
               " * makes current), picking the cubin for the device or else the newest PTX\n"
               " * it can run. Then launch from any thread. Every function returns a\n"
               " * tc_status; %s_last_error() says more about a failure on the calling\n"
               " * thread. %s_load and %s_unload must not race with launches.\n"
               " *\n"
               " * Pointer arguments are device addresses (a CUdeviceptr cast to void *);\n"
               " * f16, bf16 and fp8 scalars are passed as their bits. A launch runs grid.x *\n"
               " * grid.y * grid.z programs; an empty grid launches nothing.\n"
               " */\n"
               "#ifndef %s\n"
               "#define %s\n"
               "\n"
               "#include <stdbool.h>\n"
               "#include <stdint.h>\n"
               "\n"
               "#include <tilec/runtime.h>\n"
               "\n"
               "#ifdef __cplusplus\n"
               "extern \"C\" {\n"
               "#endif\n"
               "\n"
               "tc_status %s_load(CUcontext ctx);\n"
               "tc_status %s_unload(void);\n"
               "const char *%s_last_error(void);\n"
               "const char *%s_image(void); /* what was loaded: \"sm_90a cubin\", \"sm_80 PTX\"; \"\" before */\n",
               name, in->source_name, tc_version(), *in->specialization ? in->specialization : "(none)",
               targets.data ? targets.data : "", name, name, name, name, guard, guard, name, name, name, name);
    for (size_t k = 0; k < sig->num_kernels; k++) {
        const tc_kernel_desc *d = &sig->kernels[k];
        buf_printf(h, "\n/* %s(", d->name);
        for (size_t p = 0; p < d->num_params; p++) {
            if (p)
                buf_puts(h, ", ");
            tile_param(h, &d->params[p]);
        }
        buf_printf(h, ")\n *   %d warps (%d threads) per program; dynamic shared memory:", d->num_warps,
                   32 * d->num_warps);
        for (size_t i = 0; i < in->num_images; i++) {
            const tc_kernel_desc *m = rt_meta_find(in->images[i].meta, d->name);
            buf_printf(h, "%s %zu bytes (%s)", i ? "," : "", m ? m->shared_bytes : 0, in->images[i].arch);
        }
        if (kernel_max_maps(in, d->name)) {
            buf_puts(h, ";\n *   TMA tensor maps it builds at each launch:");
            for (size_t i = 0; i < in->num_images; i++) {
                const tc_kernel_desc *m = rt_meta_find(in->images[i].meta, d->name);
                buf_printf(h, "%s %zu (%s)", i ? "," : "", m ? m->num_tensor_maps : 0, in->images[i].arch);
            }
            buf_puts(h, ": the pointers and strides they read must be 16-byte aligned");
        }
        if (kernel_any_persistent(in, d->name)) {
            buf_puts(h, ";\n *   persistent in");
            for (size_t i = 0, n = 0; i < in->num_images; i++) {
                const tc_kernel_desc *m = rt_meta_find(in->images[i].meta, d->name);
                if (m && m->persistent)
                    buf_printf(h, "%s %s", n++ ? "," : "", in->images[i].arch);
            }
            buf_puts(h, ": as many programs as the device holds at once loop over the grid,\n"
                        " *   which must have at most 2^31 - 1 programs");
        }
        buf_printf(h, " */\ntc_status %s_%s(CUstream stream", name, d->name);
        for (size_t p = 0; p < d->num_params; p++)
            buf_printf(h, ", %s%s", c_type(&d->params[p]), c_param_name(&a, d->params[p].name));
        buf_puts(h, ", tc_dim3 grid);\n");
    }
    buf_puts(h, "\n#ifdef __cplusplus\n}\n#endif\n\n#endif\n");

    /* ---- NAME.c ---- */
    buf_printf(c,
               "/*\n"
               " * %s.c - launchers for %s, generated by %s. Do not edit.\n"
               " * Specialization: %s\n"
               " * Needs tilec's headers to compile; links against nothing but libdl (libcuda\n"
               " * is opened at run time).\n"
               " */\n"
               "#include \"%s\"\n"
               "\n"
               "#include <dlfcn.h>\n"
               "#include <stdarg.h>\n"
               "#include <stddef.h>\n"
               "#include <stdio.h>\n"
               "#include <string.h>\n"
               "\n"
               "#ifdef __GNUC__\n"
               "#pragma GCC diagnostic ignored \"-Woverlength-strings\" /* the PTX */\n"
               "#endif\n"
               "\n"
               "#define %s_NUM_KERNELS %zu\n"
               "#define %s_TARGETS \"%s\"\n"
               "#define %s_MAX_MAPS %zu /* tensor maps of a launch, at most (at least 1) */\n"
               "#define %s_LINE_INFO %d /* 1: the PTX maps instructions to source lines (tilec -g) */\n"
               "\n"
               "static const char *const %s_kernel_names[%s_NUM_KERNELS] = {",
               name, in->source_name, tc_version(), *in->specialization ? in->specialization : "(none)",
               in->header_name, name, sig->num_kernels, name, targets.data ? targets.data : "", name, max_maps, name,
               in->line_info, name, name);
    for (size_t k = 0; k < sig->num_kernels; k++)
        buf_printf(c, "%s\"%s\"", k ? ", " : "", sig->kernels[k].name);
    buf_puts(c, "};\n\n/* ---- code ---- */\n");
    for (size_t i = 0; i < in->num_images; i++) {
        const CgAotImage *img = &in->images[i];
        buf_printf(c, "\n/* %s PTX, %zu bytes */\nstatic const char %s_ptx_%zu[] =\n", img->arch, img->ptx_len, name,
                   i);
        emit_string(c, img->ptx, img->ptx_len);
        buf_puts(c, ";\n");
        if (img->cubin) {
            buf_printf(c, "\n/* %s cubin, %zu bytes */\nstatic _Alignas(16) const unsigned char %s_cubin_%zu[] = {",
                       img->arch, img->cubin_len, name, i);
            emit_bytes(c, img->cubin, img->cubin_len);
            buf_puts(c, "};\n");
        }
    }
    buf_printf(c,
               "\n/* A TMA tensor map a launch builds from its arguments (tilec's tc_tensor_map_desc):\n"
               " * cuTensorMapEncodeTiled's parameters, dimensions innermost first. */\n"
               "struct %s_tensor_map {\n"
               "    const char *base_name; /* the pointer argument the tensor starts at */\n"
               "    int base;              /* ... its index */\n"
               "    int dtype;             /* CUtensorMapDataType */\n"
               "    unsigned elem_bytes;\n"
               "    unsigned rank;\n"
               "    int dim_arg[5];           /* the argument holding an extent, or -1: dim */\n"
               "    unsigned dim_bytes[5];    /* ... an int32_t (4) or an int64_t (8) */\n"
               "    long long dim[5];         /* a constant extent; 0: unbounded */\n"
               "    int stride_arg[5];        /* dimensions 1..rank-1: the argument holding the stride in elements, or -1 */\n"
               "    unsigned stride_bytes[5];\n"
               "    long long stride[5];      /* a constant stride, in elements */\n"
               "    unsigned box[5];          /* elements one copy moves along each dimension */\n"
               "    int swizzle;              /* CUtensorMapSwizzle */\n"
               "};\n",
               name);
    for (size_t i = 0; i < in->num_images; i++)
        for (size_t k = 0; k < sig->num_kernels; k++) {
            const tc_kernel_desc *m = rt_meta_find(in->images[i].meta, sig->kernels[k].name);
            if (m && m->num_tensor_maps)
                emit_maps(c, name, i, k, m);
        }
    buf_printf(c,
               "\n/* Which image serves which device, and each kernel's launch shape in it. */\n"
               "struct %s_image_desc {\n"
               "    const char *what;  /* \"sm_90a cubin\" */\n"
               "    int cc;            /* the compute capability it was built for, major * 10 + minor */\n"
               "    int exact;         /* runs on that compute capability only (sm_90a) */\n"
               "    int is_cubin;      /* a cubin runs on its major version only; PTX on every later one */\n"
               "    const void *image;\n"
               "    unsigned block[%s_NUM_KERNELS];  /* threads per program */\n"
               "    unsigned shared[%s_NUM_KERNELS]; /* dynamic shared memory, bytes */\n"
               "    unsigned num_maps[%s_NUM_KERNELS]; /* tensor maps passed after the arguments */\n"
               "    const struct %s_tensor_map *maps[%s_NUM_KERNELS];\n"
               "    unsigned persistent[%s_NUM_KERNELS]; /* 1: takes the grid after the arguments, before the\n"
               "                                         maps, as three int32_t, and loops over it */\n"
               "};\n"
               "\n"
               "/* In order of preference: cubins, then PTX; newer targets first. */\n"
               "static const struct %s_image_desc %s_images[] = {\n",
               name, name, name, name, name, name, name, name, name);
    size_t num_slots = 0;
    Slot *slots = ARENA_ARRAY(&a, Slot, 2 * in->num_images + 1);
    for (size_t i = 0; i < in->num_images; i++) {
        if (in->images[i].cubin)
            slots[num_slots++] = (Slot){&in->images[i], i, true};
        slots[num_slots++] = (Slot){&in->images[i], i, false};
    }
    for (size_t i = 1; i < num_slots; i++) /* insertion sort: stable, tiny */
        for (size_t j = i;
             j > 0 && image_rank(slots[j].img, slots[j].cubin) < image_rank(slots[j - 1].img, slots[j - 1].cubin);
             j--) {
            Slot t = slots[j];
            slots[j] = slots[j - 1];
            slots[j - 1] = t;
        }
    for (size_t s = 0; s < num_slots; s++) {
        const CgAotImage *img = slots[s].img;
        bool exact;
        int cc = cg_aot_arch_cc(img->arch, &exact);
        buf_printf(c, "    {\"%s %s\", %d, %d, %d, %s_%s_%zu", img->arch, slots[s].cubin ? "cubin" : "PTX", cc, exact,
                   slots[s].cubin, name, slots[s].cubin ? "cubin" : "ptx", slots[s].index);
        for (Column col = COL_BLOCK; col <= COL_PERSISTENT; col++)
            emit_column(c, name, sig, &slots[s], col);
        buf_puts(c, "},\n");
    }
    buf_puts(c, "};\n\n");
    emit_loader(c, name);

    buf_puts(c, "\n/* ---- launchers ---- */\n");
    for (size_t k = 0; k < sig->num_kernels; k++) {
        const tc_kernel_desc *d = &sig->kernels[k];
        buf_printf(c, "\ntc_status %s_%s(CUstream stream", name, d->name);
        for (size_t p = 0; p < d->num_params; p++)
            buf_printf(c, ", %s%s", c_type(&d->params[p]), c_param_name(&a, d->params[p].name));
        buf_puts(c, ", tc_dim3 grid) {\n");
        /* narrow scalars travel in 32-bit temporaries */
        for (size_t p = 0; p < d->num_params; p++) {
            const tc_param_desc *q = &d->params[p];
            const char *n = c_param_name(&a, q->name);
            if (q->is_pointer)
                continue;
            if (q->dtype == TC_DTYPE_I1)
                buf_printf(c, "    uint32_t tc_a%zu = %s ? 1u : 0u;\n", p, n);
            else if (q->dtype == TC_DTYPE_I8 || q->dtype == TC_DTYPE_I16)
                buf_printf(c, "    int32_t tc_a%zu = %s;\n", p, n);
            else if (fp_bits_param(q))
                buf_printf(c, "    uint32_t tc_a%zu = %s;\n", p, n);
        }
        /* room for what the loaded image's kernel takes after the arguments: its grid, if persistent, and its
         * tensor maps */
        size_t room = d->num_params + kernel_max_hidden(in, d->name);
        buf_printf(c, "    void *tc_args[%zu] = {", room ? room : 1);
        for (size_t p = 0; p < d->num_params; p++) {
            const tc_param_desc *q = &d->params[p];
            bool temp = !q->is_pointer && (q->dtype == TC_DTYPE_I1 || q->dtype == TC_DTYPE_I8 ||
                                           q->dtype == TC_DTYPE_I16 || fp_bits_param(q));
            if (temp)
                buf_printf(c, "%s&tc_a%zu", p ? ", " : "", p);
            else
                buf_printf(c, "%s(void *)&%s", p ? ", " : "", c_param_name(&a, q->name));
        }
        buf_printf(c, "%s};\n", d->num_params ? "" : "NULL");
        for (size_t p = 0; p < d->num_params; p++)
            if (d->params[p].is_pointer)
                buf_printf(c,
                           "    if (!%s)\n"
                           "        return %s_fail(TC_ERROR_INVALID_ARGUMENT, \"%s_%s: %s is NULL\");\n",
                           c_param_name(&a, d->params[p].name), name, name, d->name, d->params[p].name);
        buf_printf(c, "    return %s_launch(%zu, \"%s_%s\", grid, stream, tc_args, %zu);\n}\n", name, k, name, d->name,
                   d->num_params);
    }
    tc_guard_pop(&g);
    buf_free(&targets);
    arena_free(&a);
}

/* ---- ptxas ---- */

/* ptxas in PATH, else the toolkit's default place; NULL if neither. */
static char *find_ptxas(void) {
    const char *path = secure_getenv("PATH");
    char buf[4096];
    while (path && *path) {
        const char *end = strchr(path, ':');
        size_t n = end ? (size_t)(end - path) : strlen(path);
        if (n && n + 7 < sizeof buf) {
            memcpy(buf, path, n);
            memcpy(buf + n, "/ptxas", 7);
            if (access(buf, X_OK) == 0)
                return strdup(buf);
        }
        path = end ? end + 1 : NULL;
    }
    if (access("/usr/local/cuda/bin/ptxas", X_OK) == 0)
        return strdup("/usr/local/cuda/bin/ptxas");
    return NULL;
}

static bool write_file(const char *path, const void *data, size_t len) {
    FILE *f = fopen(path, "wb");
    if (!f)
        return false;
    bool ok = fwrite(data, 1, len, f) == len;
    return fclose(f) == 0 && ok;
}

static bool read_file(const char *path, RtBytes *out) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    char chunk[65536];
    size_t n;
    bool ok = true;
    while (ok && (n = fread(chunk, 1, sizeof chunk, f)) > 0)
        ok = rt_bytes_append(out, chunk, n);
    ok = ok && !ferror(f);
    fclose(f);
    return ok;
}

extern char **environ;

/* `ptxas --gpu-name ARCH [-lineinfo] -o DIR/out.cubin DIR/in.ptx`, its output in DIR/ptxas.log. */
static tc_status run_ptxas(const char *ptxas, const char *arch, bool line_info, const char *ptx, size_t len,
                           RtBytes *cubin) {
    const char *tmp = secure_getenv("TMPDIR");
    char dir[4096], in[4200], out[4200], log[4200];
    snprintf(dir, sizeof dir, "%s/tilec-aot-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir))
        return rt_fail(TC_ERROR_IO, "cannot create a temporary directory %s: %s", dir, strerror(errno));
    snprintf(in, sizeof in, "%s/in.ptx", dir);
    snprintf(out, sizeof out, "%s/out.cubin", dir);
    snprintf(log, sizeof log, "%s/ptxas.log", dir);
    tc_status st = TC_OK;
    if (!write_file(in, ptx, len)) {
        st = rt_fail(TC_ERROR_IO, "cannot write %s: %s", in, strerror(errno));
    } else {
        char *argv[] = {(char *)ptxas, "--gpu-name", (char *)arch, "-o", out, in, NULL, NULL};
        if (line_info) { /* keep the .loc lines in the cubin */
            memmove(argv + 2, argv + 1, 5 * sizeof *argv);
            argv[1] = "-lineinfo";
        }
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        posix_spawn_file_actions_adddup2(&fa, 1, 2);
        pid_t pid;
        int err = posix_spawn(&pid, ptxas, &fa, NULL, argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        int status = 0;
        if (err != 0) {
            st = rt_fail(TC_ERROR_IO, "cannot run %s: %s", ptxas, strerror(err));
        } else if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            RtBytes text = {0};
            read_file(log, &text);
            st = rt_fail(TC_ERROR_INTERNAL,
                         "%s --gpu-name %s rejected tilec's PTX (a bug in tilec, or a ptxas "
                         "older than the PTX):\n%s",
                         ptxas, arch, text.data ? (const char *)text.data : "");
            rt_bytes_free(&text);
        } else if (!read_file(out, cubin)) {
            st = rt_fail(TC_ERROR_IO, "cannot read %s", out);
        }
    }
    unlink(in);
    unlink(out);
    unlink(log);
    rmdir(dir);
    return st;
}

/* ---- the public entry point ---- */

void tc_aot_request_init(tc_aot_request *req) {
    if (req)
        memset(req, 0, sizeof *req);
}

const char *tc_aot_header(const tc_aot_output *o, size_t *len) {
    if (len)
        *len = o ? o->header.len : 0;
    return o && o->header.data ? o->header.data : "";
}

const char *tc_aot_source(const tc_aot_output *o, size_t *len) {
    if (len)
        *len = o ? o->source.len : 0;
    return o && o->source.data ? o->source.data : "";
}

const char *tc_aot_notes(const tc_aot_output *o) {
    return o && o->notes.data ? o->notes.data : "";
}

void tc_aot_output_destroy(tc_aot_output *o) {
    if (!o)
        return;
    buf_free(&o->header);
    buf_free(&o->source);
    buf_free(&o->notes);
    free(o);
}

/* "BLOCK=1024, SINGLE_TILE=true" */
static bool describe_constexprs(const tc_aot_request *req, RtBytes *out) {
    char item[256];
    for (size_t i = 0; i < req->num_constexprs; i++) {
        const tc_constexpr *c = &req->constexprs[i];
        switch (c->kind) {
        case TC_CONSTEXPR_INT: snprintf(item, sizeof item, "%s=%lld", c->name, (long long)c->i); break;
        case TC_CONSTEXPR_FLOAT: snprintf(item, sizeof item, "%s=%.17g", c->name, c->f); break;
        case TC_CONSTEXPR_BOOL: snprintf(item, sizeof item, "%s=%s", c->name, c->i ? "true" : "false"); break;
        case TC_CONSTEXPR_DTYPE: snprintf(item, sizeof item, "%s=%s", c->name, rt_dtype_name((tc_dtype)c->i)); break;
        }
        /* comment-safe: no "*" followed by "/" can come from names and numbers */
        if ((i && !rt_bytes_append(out, ", ", 2)) || !rt_bytes_append(out, item, strlen(item)))
            return false;
    }
    return rt_bytes_append(out, "", 0);
}

typedef struct AotJob {
    RtMeta sig;
    size_t num_archs;
    RtBytes ptx[8], cubin[8];
    RtMeta meta[8];
    CgAotImage images[8];
    RtBytes spec;
    char *ptxas;
    char header_name[300];
} AotJob;

static void job_free(AotJob *j) {
    rt_meta_free(&j->sig);
    for (size_t i = 0; i < 8; i++) {
        rt_bytes_free(&j->ptx[i]);
        rt_bytes_free(&j->cubin[i]);
        rt_meta_free(&j->meta[i]);
    }
    rt_bytes_free(&j->spec);
    free(j->ptxas);
    free(j);
}

/* RtSpecializeFn that copies the signature into *user (an RtMeta) and lets
 * the compile go on with no more facts. */
static tc_status keep_signature(void *user, const RtMeta *sig, const tc_param_spec **specs, size_t *num_specs,
                                bool *stop) {
    (void)specs;
    (void)num_specs;
    (void)stop;
    return rt_meta_copy(sig->kernels, sig->num_kernels, user);
}

/* The compiled kernels must be the ones the signature names, with as many parameters. */
static bool meta_matches(const RtMeta *sig, const RtMeta *m) {
    if (sig->num_kernels != m->num_kernels)
        return false;
    for (size_t k = 0; k < sig->num_kernels; k++) {
        const tc_kernel_desc *d = rt_meta_find(m, sig->kernels[k].name);
        if (!d || d->num_params != sig->kernels[k].num_params)
            return false;
    }
    return true;
}

tc_status tc_aot_generate(const tc_aot_request *req, tc_aot_output **out, tc_diagnostics *diags) {
    static const char *const default_archs[] = {"sm_80", "sm_90a"};
    if (out)
        *out = NULL;
    if (!req || !out)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_aot_generate: %s is NULL", !req ? "req" : "out");
    if (!req->source)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_aot_generate: req->source is NULL (a source is required)");
    if (!req->source->text && req->source->len)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_aot_generate: req->source->text is NULL with len %zu",
                       req->source->len);
    if (req->num_constexprs && !req->constexprs)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_aot_generate: req->num_constexprs is %zu with NULL constexprs",
                       req->num_constexprs);
    if (req->num_archs && !req->archs)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_aot_generate: req->num_archs is %zu with NULL archs",
                       req->num_archs);
    if (!is_identifier(req->name))
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_aot_generate: the name '%s' is not a C identifier",
                       req->name ? req->name : "");
    const char *const *archs = req->archs ? req->archs : default_archs;
    size_t num_archs = req->archs ? req->num_archs : 2;
    if (num_archs == 0 || num_archs > 8)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_aot_generate: req->num_archs is %zu: between 1 and 8 targets",
                       num_archs);
    for (size_t i = 0; i < num_archs; i++) {
        bool exact;
        if (!cg_aot_arch_cc(archs[i], &exact))
            return rt_fail(TC_ERROR_UNSUPPORTED, "tc_aot_generate: req->archs[%zu]: unknown target '%s' (sm_80, sm_90, sm_90a)", i,
                           archs[i] ? archs[i] : "");
        for (size_t j = 0; j < i; j++)
            if (strcmp(archs[i], archs[j]) == 0)
                return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tc_aot_generate: req->archs: target %s given twice", archs[i]);
    }
    tc_options opt;
    rt_request_options(req->options, &opt);

    AotJob *j = calloc(1, sizeof *j);
    if (!j)
        return rt_fail(TC_ERROR_OUT_OF_MEMORY, "out of memory");
    snprintf(j->header_name, sizeof j->header_name, "%s.h", req->name);
    tc_status st = describe_constexprs(req, &j->spec) ? TC_OK : rt_fail(TC_ERROR_OUT_OF_MEMORY, "out of memory");
    for (size_t i = 0; i < num_archs && st == TC_OK; i++) {
        /* the first target's compile also gives the signature, from its front end */
        RtCompileRequest creq = {req->source, req->kernel,    req->constexprs,       req->num_constexprs,
                                 &opt,        archs[i],       opt.params,            opt.num_params,
                                 i == 0 ? keep_signature : NULL, &j->sig};
        st = rt_compile_ptx(NULL, &creq, &j->ptx[i], &j->meta[i], diags);
        if (st == TC_OK && !meta_matches(&j->sig, &j->meta[i]))
            st = rt_fail(TC_ERROR_INTERNAL, "the %s compile produced other kernels than the source declares", archs[i]);
        j->num_archs = i + 1;
    }
    tc_aot_output *o = NULL;
    if (st == TC_OK && !(o = calloc(1, sizeof *o)))
        st = rt_fail(TC_ERROR_OUT_OF_MEMORY, "out of memory");
    if (st != TC_OK) {
        job_free(j);
        free(o);
        return st;
    }
    TcGuard g;
    if (TC_GUARD(g)) {
        tc_aot_output_destroy(o);
        job_free(j);
        return rt_fail(g.code == 1 ? TC_ERROR_OUT_OF_MEMORY : TC_ERROR_INTERNAL, "tc_aot_generate: %s", g.message);
    }
    if (req->ptxas) {
        j->ptxas = *req->ptxas ? strdup(req->ptxas) : NULL;
        if (!*req->ptxas)
            buf_puts(&o->notes, "no ptxas requested: embedding PTX only\n");
    } else if (!(j->ptxas = find_ptxas())) {
        buf_puts(&o->notes, "ptxas not found in PATH or /usr/local/cuda/bin: embedding PTX only\n");
    }
    tc_guard_pop(&g);
    for (size_t i = 0; i < num_archs && st == TC_OK; i++) {
        if (j->ptxas)
            st = run_ptxas(j->ptxas, archs[i], opt.line_info != 0, (const char *)j->ptx[i].data, j->ptx[i].len,
                           &j->cubin[i]);
        j->images[i] = (CgAotImage){archs[i],        (const char *)j->ptx[i].data,
                                    j->ptx[i].len,   j->ptxas ? j->cubin[i].data : NULL,
                                    j->cubin[i].len, &j->meta[i]};
    }
    if (st != TC_OK) {
        tc_aot_output_destroy(o);
        job_free(j);
        return st;
    }
    CgAotInput in = {req->name,
                     req->header_name ? req->header_name : j->header_name,
                     req->source->name ? req->source->name : "<string>",
                     (const char *)j->spec.data,
                     &j->sig,
                     j->images,
                     num_archs,
                     opt.line_info != 0};
    if (TC_GUARD(g)) {
        tc_aot_output_destroy(o);
        job_free(j);
        return rt_fail(g.code == 1 ? TC_ERROR_OUT_OF_MEMORY : TC_ERROR_INTERNAL, "tc_aot_generate: %s", g.message);
    }
    cg_aot_emit(&in, &o->header, &o->source);
    tc_guard_pop(&g);
    job_free(j);
    *out = o;
    return TC_OK;
}
