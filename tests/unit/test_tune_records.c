/* Tuning records: what the writer writes the parser reads back; a records
 * file is untrusted input, so every malformed line is refused with a
 * message (and skipped by the loader), never a crash. */
#include <stdlib.h>
#include <unistd.h>

#include "test_util.h"
#include "tune/tune.h"

static tune_record sample(void)
{
    tune_record r;
    memset(&r, 0, sizeof r);
    memcpy(r.task, "0123456789abcdef0123456789abcdef", SCH_KEY_LEN + 1);
    r.target = "avx512 | cpu \"x\" | cc";
    r.op = "conv_nchwc f32[1,9,56,56,16]";
    r.schedule = "split y i3 8\nvectorize y i4\n";
    for (int i = 0; i < SCH_KNOB_COUNT_; i++) r.knobs[i] = i * 3;
    r.status = TUNE_WRONG;
    r.ms = 0.125;
    r.spread = 0.01;
    r.flops = 1e7;
    r.verified = true;
    snprintf(r.reason, sizeof r.reason, "output 0 differs\tat \x01 element 3");
    return r;
}

static void round_trip(void)
{
    smelt_ctx ctx = {.status = SMELT_OK};
    tune_record r = sample(), back;
    smelt_strbuf sb;
    smelt_strbuf_init(&sb);
    CHECK(tune_record_write(&ctx, &sb, &r) == SMELT_OK);
    CHECK(sb.len > 0 && sb.data[sb.len - 1] == '\n');
    CHECK(memchr(sb.data, '\n', sb.len - 1) == NULL); /* one line */
    CHECK(tune_record_parse(&ctx, sb.data, sb.len - 1, &back) == SMELT_OK);
    CHECK(strcmp(back.task, r.task) == 0);
    CHECK(strcmp(back.target, r.target) == 0);
    CHECK(strcmp(back.op, r.op) == 0);
    CHECK(strcmp(back.schedule, r.schedule) == 0);
    CHECK(memcmp(back.knobs, r.knobs, sizeof r.knobs) == 0);
    CHECK(back.status == TUNE_WRONG && back.verified);
    CHECK_NEAR(back.ms, 0.125, 1e-9);
    CHECK_STR_CONTAINS(back.reason, "differs");
    tune_record_fini(&back);
    smelt_strbuf_fini(&sb);
}

static const char *const bad_lines[] = {
    "",
    "{",
    "[]",
    "{\"v\":1}",
    "{\"v\":2,\"task\":\"0123456789abcdef0123456789abcdef\",\"target\":\"t\",\"schedule\":\"s\"}",
    "{\"v\":1,\"task\":\"nothex\",\"target\":\"t\",\"schedule\":\"s\"}",
    "{\"v\":1,\"task\":\"0123456789abcdef0123456789abcdef\",\"target\":\"t\"}",
    "{\"v\":1,\"task\":\"0123456789abcdef0123456789abcdef\",\"target\":\"t\",\"schedule\":\"s\",\"ms\":-1}",
    "{\"v\":1,\"task\":\"0123456789abcdef0123456789abcdef\",\"target\":\"t\",\"schedule\":\"s\",\"ms\":1e999}",
    "{\"v\":1,\"task\":\"0123456789abcdef0123456789abcdef\",\"target\":\"t\",\"schedule\":\"s\",\"knobs\":[1,2]}",
    "{\"v\":1,\"task\":\"0123456789abcdef0123456789abcdef\",\"target\":\"t\",\"schedule\":\"s\",\"knobs\":[1,2,3,4,5,6,7,8,9]}",
    "{\"v\":1,\"task\":\"0123456789abcdef0123456789abcdef\",\"target\":\"t\",\"schedule\":\"s\",\"status\":\"great\"}",
    "{\"v\":1,\"task\":\"0123456789abcdef0123456789abcdef\",\"target\":\"t\",\"schedule\":\"s\\q\"}",
    "{\"v\":1,\"task\":\"0123456789abcdef0123456789abcdef\",\"target\":\"t\",\"schedule\":\"s\"} x",
    "{\"v\":1,\"task\":\"0123456789abcdef0123456789abcdef\",\"target\":\"t\",\"schedule\":\"s\",\"x\":{}}",
    "{\"v\":1,\"task\":\"0123456789abcdef0123456789abcdef\",\"target\":\"t\",\"schedule\":\"\\u12\"}",
    "{\"v\":1,\"task\":\"0123456789abcdef0123456789abcdef\",\"target\":\"t\",\"schedule\":\"unterminated",
};

static void malformed(void)
{
    for (size_t i = 0; i < sizeof bad_lines / sizeof bad_lines[0]; i++) {
        smelt_ctx ctx = {.status = SMELT_OK};
        tune_record r;
        smelt_status s = tune_record_parse(&ctx, bad_lines[i], strlen(bad_lines[i]), &r);
        CHECK(s == SMELT_ERR_PARSE || s == SMELT_ERR_UNSUPPORTED);
        CHECK(ctx.message[0] != '\0');
        if (s == SMELT_OK) fprintf(stderr, "accepted: %s\n", bad_lines[i]);
    }
    /* truncation at every byte of a good line: refused or parsed, never more */
    smelt_ctx ctx = {.status = SMELT_OK};
    tune_record r = sample();
    smelt_strbuf sb;
    smelt_strbuf_init(&sb);
    tune_record_write(&ctx, &sb, &r);
    for (size_t n = 0; n + 1 < sb.len; n++) {
        tune_record back;
        smelt_ctx c2 = {.status = SMELT_OK};
        if (tune_record_parse(&c2, sb.data, n, &back) == SMELT_OK) tune_record_fini(&back);
        else CHECK(c2.status == SMELT_ERR_PARSE);
    }
    smelt_strbuf_fini(&sb);
}

/* records written before algo (6 knobs) and tile_k (7) was added: the rest 0 */
static void older_knob_counts(void)
{
    static const char *const lines[] = {
        "{\"v\":1,\"task\":\"0123456789abcdef0123456789abcdef\",\"target\":\"t\",\"schedule\":\"s\",\"knobs\":[1,2,3,4,5,6]}",
        "{\"v\":1,\"task\":\"0123456789abcdef0123456789abcdef\",\"target\":\"t\",\"schedule\":\"s\",\"knobs\":[1,2,3,4,5,6,7]}",
    };
    for (int i = 0; i < 2; i++) {
        smelt_ctx ctx = {.status = SMELT_OK};
        tune_record r;
        CHECK(tune_record_parse(&ctx, lines[i], strlen(lines[i]), &r) == SMELT_OK);
        if (ctx.status != SMELT_OK) continue;
        for (int k = 0; k < SCH_KNOB_COUNT_; k++) CHECK(r.knobs[k] == (k < 6 + i ? k + 1 : 0));
        tune_record_fini(&r);
    }
}

static void loading(void)
{
    char path[] = "/tmp/smelt_records_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    FILE *f = fdopen(fd, "w");
    smelt_ctx ctx = {.status = SMELT_OK};
    tune_record r = sample();
    r.status = TUNE_OK;
    r.verified = false;
    r.target = "here";
    tune_record_append(&ctx, f, &r);
    r.ms = 0.05;
    r.schedule = "vectorize y i4\n";
    tune_record_append(&ctx, f, &r);
    r.target = "there";
    r.ms = 0.01;
    tune_record_append(&ctx, f, &r);
    fputs("garbage\n{\"v\":7,\"task\":\"0123456789abcdef0123456789abcdef\",\"target\":\"here\",\"schedule\":\"s\"}\n", f);
    fputs("{\"v\":1,\"task\":\"0123456789abcdef0123456789abcdef\",\"target\":\"here\",\"sched", f); /* cut by a kill */
    fclose(f);
    tune_db db;
    CHECK(tune_db_load(&ctx, path, "here", &db) == SMELT_OK);
    CHECK(db.n == 2 && db.other_target == 1 && db.bad_schema == 1 && db.malformed == 2);
    const tune_record *best = tune_db_best(&db, "0123456789abcdef0123456789abcdef");
    CHECK(best && strcmp(best->schedule, "vectorize y i4\n") == 0);
    CHECK(tune_db_find(&db, "0123456789abcdef0123456789abcdef", "split y i3 8\nvectorize y i4\n") != NULL);
    CHECK(tune_db_best(&db, "ffffffffffffffffffffffffffffffff") == NULL);
    sch_source src = tune_db_source(&db);
    CHECK(src.find(src.user, "0123456789abcdef0123456789abcdef") == best->schedule);
    tune_db_fini(&db);
    CHECK(tune_db_load(&ctx, "/nonexistent/records.jsonl", "here", &db) == SMELT_OK && db.n == 0);
    unlink(path);
}

int main(void)
{
    round_trip();
    malformed();
    older_knob_counts();
    loading();
    TEST_MAIN_END();
}
