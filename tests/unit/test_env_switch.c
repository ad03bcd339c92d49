/* test_env_switch.c — the kit's on/off environment switches (base/env_switch.h): unset and empty
 * give the default, 0 and 1 their value, and any other spelling (off, true, 2, " 1") stops the
 * process with one line naming the variable, its value and what is expected; every switch of the
 * table is checked at start with its own default. The stopping cases run in a child process whose
 * stderr the test reads. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/env_switch.h"
#include "lib/child_env.h"
#include "lib/ck_mpi.h"
#include "lib/file_io.h"

START_TEST(values_and_defaults)
{
    const struct {
        const char *v;
        int dflt, want;
    } cases[] = {
        {NULL, 0, 0}, {NULL, 1, 1}, {"", 0, 0}, {"", 1, 1},    {"0", 1, 0},
        {"1", 0, 1},  {"off", 1, -1}, {"true", 0, -1}, {"2", 0, -1}, {" 1", 0, -1},
        {"1 ", 0, -1}, {"00", 1, -1}, {"yes", 0, -1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CK_EXPECT(env_switch_parse(cases[i].v, cases[i].dflt) == cases[i].want,
                  "env_switch_parse(\"%s\", %d) = %d, want %d", cases[i].v ? cases[i].v : "(null)",
                  cases[i].dflt, env_switch_parse(cases[i].v, cases[i].dflt), cases[i].want);
    unsetenv("HVDLAB_TEST_SWITCH");
    CK_EXPECT(env_switch("HVDLAB_TEST_SWITCH", 1) == 1, "unset: want the default 1");
    setenv("HVDLAB_TEST_SWITCH", "0", 1);
    CK_EXPECT(env_switch("HVDLAB_TEST_SWITCH", 1) == 0, "0: want 0");
    setenv("HVDLAB_TEST_SWITCH", "1", 1);
    CK_EXPECT(env_switch("HVDLAB_TEST_SWITCH", 0) == 1, "1: want 1");
    unsetenv("HVDLAB_TEST_SWITCH");
    CK_AGREE();
}
END_TEST

typedef struct {
    const char *name;
    int all;
} switch_read;

static int switch_body(void *arg)
{
    const switch_read *r = arg;
    if (r->all) {
        env_switch_check_all();
        return 10;
    }
    return 10 + env_switch(r->name, 1); /* not reached for a bad value */
}

/* In a child with name set to value: env_switch("HVDLAB_TEST_SWITCH", 1) when all is 0, else
 * env_switch_check_all. Its exit status and its stderr. */
static int child_run(const char *name, const char *value, int all, char *err, size_t errlen)
{
    switch_read r = {name, all};
    return child_env_run(name, value, switch_body, &r, err, errlen);
}

static int child_status(const char *value, char *err, size_t errlen)
{
    return child_run("HVDLAB_TEST_SWITCH", value, 0, err, errlen);
}

START_TEST(another_spelling_stops_with_one_line)
{
    char err[512];
    int st = child_status("off", err, sizeof err);
    CK_EXPECT(st != 0 && st != 10 && st != 11, "HVDLAB_TEST_SWITCH=off: exit %d, want an error", st);
    CK_EXPECT(strstr(err, "hvdlab: error:") &&
                  strstr(err, "HVDLAB_TEST_SWITCH=off: expected 0 or 1 (unset: 1)"),
              "stderr: %s", err);
    const char *nl = strchr(err, '\n');
    CK_EXPECT(nl && nl[1] == '\0', "want exactly one line, got: %s", err);
    st = child_status("0", err, sizeof err);
    CK_EXPECT(st == 10 && !err[0], "HVDLAB_TEST_SWITCH=0: exit %d, stderr %s", st, err);
    CK_AGREE();
}
END_TEST

/* Every switch of the table is checked at start (hvd_init's env_switch_check_all), by its name
 * and with its default, and reads as the table says. */
START_TEST(every_switch_checked_with_its_default)
{
    for (int i = 0; i < SWITCH_COUNT; i++)
        if (env_switch_name((env_switch_id)i))
            unsetenv(env_switch_name((env_switch_id)i));
    for (int i = 0; i < SWITCH_COUNT; i++) {
        const env_switch_id id = (env_switch_id)i;
        const char *name = env_switch_name(id);
        const int dflt = env_switch_default(id);
        CK_EXPECT(name && strncmp(name, "HVDLAB_", 7) == 0 && (dflt == 0 || dflt == 1),
                  "switch %d: name %s, default %d", i, name ? name : "(none)", dflt);
        if (!name)
            continue;
        CK_EXPECT(env_switch_on(id) == dflt, "%s unset: %d, want %d", name, env_switch_on(id),
                  dflt);
        char err[512], want[160];
        int st = child_run(name, "off", 1, err, sizeof err);
        snprintf(want, sizeof want, "%s=off: expected 0 or 1 (unset: %d)", name, dflt);
        CK_EXPECT(st != 0 && st != 10 && strstr(err, want),
                  "%s=off: exit %d, stderr %s; want an error with: %s", name, st, err, want);
        st = child_run(name, dflt ? "0" : "1", 1, err, sizeof err);
        CK_EXPECT(st == 10 && !err[0], "%s=%d: exit %d, stderr %s", name, !dflt, st, err);
        for (int j = 0; j < i; j++)
            CK_EXPECT(!env_switch_name((env_switch_id)j) ||
                          strcmp(name, env_switch_name((env_switch_id)j)) != 0,
                      "switches %d and %d are both %s", j, i, name);
    }
    CK_AGREE();
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("env_switch");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, values_and_defaults);
    tcase_add_test(tc, another_spelling_stops_with_one_line);
    tcase_add_test(tc, every_switch_checked_with_its_default);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv) { return ck_mpi_main(argc, argv, make_suite(), 0); }
