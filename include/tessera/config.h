/* Case files: INI files parsed with libinih into (section, key, value, line) entries, command-line
 * overrides (--set section.key=value), typed getters that report errors as "FILE:LINE: message",
 * and a schema of every known key (docs/config.md documents the same keys). */
#ifndef TESSERA_CONFIG_H
#define TESSERA_CONFIG_H

#include "tessera/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ts_config ts_config;

/* Parses a case file. Syntax errors, duplicate keys, unknown sections and unknown keys (not in
 * the schema) are errors naming the file and line. */
ts_status ts_config_load(ts_config **out, const char *path);
void ts_config_free(ts_config *c);

/* Applies an override "section.key=value" (adds or replaces); errors name "--set ARG". */
ts_status ts_config_set(ts_config *c, const char *assignment);

const char *ts_config_file(const ts_config *c); /* path of the case file */

int ts_config_has(const ts_config *c, const char *section, const char *key);

/* Getters: when the key is absent they return def (or NULL) and TS_OK; a malformed value is a
 * TS_ERR_INPUT error "FILE:LINE: [section] key: message". */
ts_status ts_config_string(const ts_config *c, const char *section, const char *key,
                           const char *def, const char **out);
ts_status ts_config_double(const ts_config *c, const char *section, const char *key, double def,
                           double *out);
ts_status ts_config_int(const ts_config *c, const char *section, const char *key, long def,
                        long *out);
/* Index of the value in choices (NULL-terminated); def is the index when absent. */
ts_status ts_config_choice(const ts_config *c, const char *section, const char *key, int def,
                           const char *const *choices, int *out);
/* A file path resolved relative to the case file's directory (malloc'ed, NULL when absent). */
ts_status ts_config_path(const ts_config *c, const char *section, const char *key, char **out);
/* Comma-separated finite numbers (malloc'ed array, n = 0 and NULL when absent). */
ts_status ts_config_double_list(const ts_config *c, const char *section, const char *key, int *n,
                                double **out);
/* Does the value parse as a finite number? (e.g. manning = 0.033 versus manning = n.asc) */
int ts_config_is_number(const ts_config *c, const char *section, const char *key);

/* Formats an error about a key at its location ("FILE:LINE: [section] key: ..."). */
ts_status ts_config_error(const ts_config *c, const char *section, const char *key, const char *fmt,
                          ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* The schema: every key Tessera knows, with unit, default and meaning. */
typedef struct ts_config_key {
  const char *section, *key, *unit, *def, *doc;
} ts_config_key;
/* Every case-file key Tessera knows: the keys every model shares, then each physics module's
 * (src/physics/model.c assembles them from the table of modules). */
const ts_config_key *ts_config_schema(int *n);
/* The keys every model shares: [model], [time], [output], [parallel]. */
const ts_config_key *ts_config_core_schema(int *n);

#ifdef __cplusplus
}
#endif
#endif
