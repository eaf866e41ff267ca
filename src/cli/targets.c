/* smelt targets: the code generation targets and how each runs here. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "codegen/target.h"

/* Whether `cmd` names an executable file in $PATH. */
static bool in_path(const char *cmd)
{
    if (strchr(cmd, '/')) return access(cmd, X_OK) == 0;
    const char *path = getenv("PATH");
    if (!path) return false;
    for (const char *p = path; *p;) {
        size_t n = strcspn(p, ":");
        char full[4096];
        if (n > 0 && snprintf(full, sizeof full, "%.*s/%s", (int)n, p, cmd) < (int)sizeof full &&
            access(full, X_OK) == 0)
            return true;
        p += n;
        if (*p == ':') p++;
    }
    return false;
}

/* Whether an OpenCL driver is registered with the ICD loader. */
static bool has_opencl_icd(void)
{
    DIR *d = opendir("/etc/OpenCL/vendors");
    bool found = false;
    for (struct dirent *de; d && !found && (de = readdir(d));) {
        size_t n = strlen(de->d_name);
        found = n > 4 && strcmp(de->d_name + n - 4, ".icd") == 0;
    }
    if (d) closedir(d);
    return found;
}

static void describe_gpu(const cg_target *t, char *out, size_t cap)
{
    if (t->gpu == CG_GPU_OPENCL)
        snprintf(out, cap, has_opencl_icd() ? "yes (a program on the OpenCL device)"
                                            : "no: no OpenCL driver (scripts/setup.sh installs PoCL)");
    else
        snprintf(out, cap, "packages only (%s; they run on an NVIDIA GPU)",
                 in_path("nvcc") ? "nvcc found" : "nvcc not found");
}

/* How t's code runs on this host, in words. */
static void describe_run(const cg_target *t, char *out, size_t cap)
{
    if (t->gpu != CG_GPU_NONE) {
        describe_gpu(t, out, cap);
        return;
    }
    if (cg_target_runnable(t)) {
        snprintf(out, cap, "yes (in process)");
        return;
    }
    if (!t->emulator) {
        snprintf(out, cap, "no (this CPU lacks it; packages run on a machine that has it)");
        return;
    }
    const char *cc = cg_target_cross_cc(t), *emu = t->emulator[0];
    bool have_cc = cc && in_path(cc), have_emu = in_path(emu);
    if (have_cc && have_emu)
        snprintf(out, cap, "emulated (%s, built with %s)", emu, cc);
    else
        snprintf(out, cap, "no: %s%s%s not found (scripts/setup.sh installs them)",
                 have_cc ? "" : cc ? cc : "a cross compiler", !have_cc && !have_emu ? " and " : "",
                 have_emu ? "" : emu);
}

int cli_targets(int argc, char **argv)
{
    (void)argv;
    if (argc > 0) {
        fprintf(stderr, "usage: smelt targets\n");
        return 2;
    }
    const cg_target *host = cg_target_host();
    printf("%-11s %5s %5s %6s  %s\n", "target", "lanes", "regs", "L1", "runs here");
    for (int i = 0; i < cg_target_count(); i++) {
        const cg_target *t = cg_target_at(i);
        char run[256];
        describe_run(t, run, sizeof run);
        printf("%-11s %5d %5d %5lldK  %s\n            %s\n", t->name, t->hw.lanes, t->hw.vector_regs,
               (long long)(t->hw.l1_bytes >> 10), run, t->summary);
    }
    printf("host        = %s with -march=native\n", host->name);
    return 0;
}
