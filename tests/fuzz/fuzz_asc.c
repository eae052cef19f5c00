/* libFuzzer target for the ESRI ASCII grid reader: the input bytes are written to a temporary
 * file and read with ts_asc_read, which must fail cleanly or succeed without memory errors. */
#define _POSIX_C_SOURCE 200809L
#include "tessera/raster.h"

#include <stdlib.h>

#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *input_path = fuzz_input_file(data, size);
  ts_raster raster;
  if (ts_asc_read(input_path, &raster) == TS_OK)
    ts_raster_free(&raster);
  return 0;
}
