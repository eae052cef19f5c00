/* libFuzzer target for the case-file reader: the input bytes are written to a temporary file,
 * parsed with ts_config_load and queried with every typed getter; parsing must fail cleanly or
 * succeed without memory errors. */
#define _POSIX_C_SOURCE 200809L
#include "tessera/config.h"

#include <stdlib.h>

#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *input_path = fuzz_input_file(data, size);
  ts_config *c;
  if (ts_config_load(&c, input_path) != TS_OK)
    return 0;
  double d;
  long l;
  int n, choice;
  double *list = NULL;
  char *path = NULL;
  const char *s;
  static const char *const choices[] = {"wall", "outflow", NULL};
  ts_config_double(c, "time", "end", 0, &d);
  ts_config_int(c, "swe", "tile_size", 32, &l);
  ts_config_choice(c, "boundary", "west", 0, choices, &choice);
  ts_config_string(c, "model", "type", "swe", &s);
  if (ts_config_double_list(c, "output", "times", &n, &list) == TS_OK)
    free(list);
  if (ts_config_path(c, "swe", "bed", &path) == TS_OK)
    free(path);
  if (ts_config_has(c, "swe", "manning") && !ts_config_is_number(c, "swe", "manning"))
    ts_config_error(c, "swe", "manning", "not a number: %s", "grid");
  ts_config_set(c, "time.cfl=0.2");
  ts_config_set(c, "swe.bed=");
  ts_config_free(c);
  return 0;
}
