/* libFuzzer target for the ESRI ASCII grid reader: the input bytes are written to a temporary
 * file and read with ts_asc_read, which must fail cleanly or succeed without memory errors. */
#define _POSIX_C_SOURCE 200809L
#include "tessera/raster.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char input_path[] = "/tmp/tessera_fuzz_asc_XXXXXX";

static void remove_input(void) { remove(input_path); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static int created = 0;
  if (!created) {
    int fd = mkstemp(input_path);
    if (fd < 0)
      abort();
    close(fd);
    atexit(remove_input);
    created = 1;
  }
  FILE *f = fopen(input_path, "wb");
  if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0)
    abort();
  ts_raster raster;
  if (ts_asc_read(input_path, &raster) == TS_OK)
    ts_raster_free(&raster);
  return 0;
}
