/*
 * line_info.c — source line info (tc_options.line_info, tilec -g): LLVM
 * debug metadata from which NVPTX prints `.file` and `.loc` directives that
 * name the .tile source, so that ptxas -lineinfo (the driver's
 * CU_JIT_GENERATE_LINE_INFO) maps the SASS back to it for profilers and
 * compute-sanitizer.
 *
 * One DICompileUnit per module, of emission kind DebugDirectivesOnly: NVPTX
 * then prints the line table as `.file`/`.loc` alone, as nvcc -lineinfo and
 * clang's optimized CUDA device code do. (LineTablesOnly would add DWARF
 * sections and mark the target `, debug`, which asks ptxas for debuggable
 * code.) A DISubprogram per kernel at its declaration, and on every
 * instruction a DILocation in it: the line and column of the IR op it was
 * lowered from (SrcLoc), in the file the op's Source names (as the user gave
 * it: a relative path stays relative, the standard library's kernels are
 * lib/NAME.tile). An op without a location (line 0) keeps the enclosing
 * op's; what the kernel's entry block computes carries the kernel's line.
 * The ops of an inlined func carry the func's own lines.
 *
 * Without line info none of this runs and the PTX is what it was before.
 */
#include "lower.h"

#include <string.h>

/* LLVM's DICompileUnit::DebugDirectivesOnly, which llvm-c's
 * LLVMDWARFEmissionKind does not name (it casts the value through). */
#define CG_EMISSION_DIRECTIVES_ONLY ((LLVMDWARFEmissionKind)3)

/* DWARF version 2: what NVPTX targets (clang's default for CUDA devices). */
#define CG_DWARF_VERSION 2

static const char *source_name(const Source *src) {
    return src && src->name ? src->name : "<string>";
}

/* The DIFile of src (NULL: the compile unit's), one per Source. */
static LLVMMetadataRef file_of(CgLineInfo *li, const Source *src) {
    for (int i = 0; i < li->num_files; i++)
        if (li->srcs[i] == src)
            return li->files[i];
    const char *name = source_name(src);
    LLVMMetadataRef f = LLVMDIBuilderCreateFile(li->dib, name, strlen(name), "", 0);
    if (li->num_files < CG_LINE_INFO_MAX_FILES) {
        li->srcs[li->num_files] = src;
        li->files[li->num_files++] = f;
    }
    return f;
}

void cg_line_info_begin(CgLineInfo *li, LLVMModuleRef mod, const IrModule *m) {
    memset(li, 0, sizeof *li);
    const Source *src = NULL;
    for (const IrFunc *f = m->first; f && !src; f = f->next)
        src = f->loc.src;
    li->dib = LLVMCreateDIBuilder(mod);
    LLVMMetadataRef file = file_of(li, src);
    li->cu = LLVMDIBuilderCreateCompileUnit(li->dib, LLVMDWARFSourceLanguageC, file, "tilec", 5, 1, "", 0, 0, "", 0,
                                            CG_EMISSION_DIRECTIVES_ONLY, 0, 0, 0, "", 0, "", 0);
    li->fn_type = LLVMDIBuilderCreateSubroutineType(li->dib, file, NULL, 0, LLVMDIFlagZero);
    LLVMContextRef ctx = LLVMGetModuleContext(mod);
    LLVMAddModuleFlag(mod, LLVMModuleFlagBehaviorWarning, "Debug Info Version", 18,
                      LLVMValueAsMetadata(LLVMConstInt(LLVMInt32TypeInContext(ctx), LLVMDebugMetadataVersion(), 0)));
    LLVMAddModuleFlag(mod, LLVMModuleFlagBehaviorWarning, "Dwarf Version", 13,
                      LLVMValueAsMetadata(LLVMConstInt(LLVMInt32TypeInContext(ctx), CG_DWARF_VERSION, 0)));
}

void cg_line_info_end(CgLineInfo *li) {
    if (!li->dib)
        return;
    LLVMDIBuilderFinalize(li->dib);
    LLVMDisposeDIBuilder(li->dib);
    li->dib = NULL;
}

/* A DILocation in the kernel; a location in another Source than the
 * kernel's goes through a DILexicalBlockFile of that file. */
static LLVMMetadataRef location(Cg *cg, SrcLoc loc) {
    LLVMMetadataRef scope = cg->di_scope;
    if (loc.src != cg->f->loc.src)
        scope = LLVMDIBuilderCreateLexicalBlockFile(cg->line_info->dib, scope, file_of(cg->line_info, loc.src), 0);
    return LLVMDIBuilderCreateDebugLocation(cg->ctx, (unsigned)loc.line, (unsigned)(loc.col > 0 ? loc.col : 0), scope,
                                            NULL);
}

void cg_line_info_kernel(Cg *cg) {
    CgLineInfo *li = cg->line_info;
    const IrFunc *f = cg->f;
    LLVMMetadataRef file = file_of(li, f->loc.src);
    unsigned line = f->loc.line > 0 ? (unsigned)f->loc.line : 0;
    size_t n = strlen(f->name);
    cg->di_scope = LLVMDIBuilderCreateFunction(li->dib, file, f->name, n, f->name, n, file, line, li->fn_type, 0, 1,
                                               line, LLVMDIFlagZero, 1);
    LLVMSetSubprogram(cg->fn, cg->di_scope);
    /* the entry block's code: the kernel's line */
    LLVMSetCurrentDebugLocation2(cg->b, location(cg, f->loc));
}

LLVMMetadataRef cg_line_info_enter(Cg *cg, const IrOp *op) {
    LLVMMetadataRef outer = LLVMGetCurrentDebugLocation2(cg->b);
    if (op->loc.line > 0)
        LLVMSetCurrentDebugLocation2(cg->b, location(cg, op->loc));
    return outer;
}
