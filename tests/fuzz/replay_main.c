/* Corpus replayer for builds without libFuzzer (gcc, CI): feeds every file
 * named on the command line, or found in a named folder, to
 * LLVMFuzzerTestOneInput once.  Prints "N passed, 0 failed"; a bad input
 * aborts the process, as it would under libFuzzer. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return fprintf(stderr, "cannot open %s\n", path), 0;
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0, got;
    do {
        if (len == cap) {
            uint8_t *n = realloc(buf, cap = cap ? cap * 2 : 4096);
            if (!n) break;
            buf = n;
        }
        got = fread(buf + len, 1, cap - len, f);
        len += got;
    } while (got > 0);
    fclose(f);
    LLVMFuzzerTestOneInput(buf ? buf : (const uint8_t *)"", len);
    free(buf);
    return 1;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Files of a folder in name order, so runs are reproducible. */
static int replay_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return fprintf(stderr, "cannot open %s\n", dir), 0;
    char **names = NULL;
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        char **nn = realloc(names, (n + 1) * sizeof *names);
        if (!nn) break;
        names = nn;
        names[n++] = strdup(e->d_name);
    }
    closedir(d);
    if (n) qsort(names, n, sizeof *names, cmp_str);
    int count = 0;
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        count += replay_file(path);
        free(names[i]);
    }
    free(names);
    return count;
}

int main(int argc, char **argv)
{
    int count = 0, missing = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "no such file or folder: %s\n", argv[i]);
            missing++;
        } else {
            count += S_ISDIR(st.st_mode) ? replay_dir(argv[i]) : replay_file(argv[i]);
        }
    }
    printf("%d passed, %d failed\n", count, missing);
    return missing ? 1 : 0;
}
