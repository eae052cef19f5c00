/* Shared by the fuzz targets: writes the fuzzer's input bytes to one temporary file per process
 * (removed at exit) and returns its path, since the readers under test take file names. */
#ifndef TESSERA_FUZZ_INPUT_H
#define TESSERA_FUZZ_INPUT_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char fuzz_input_path[] = "/tmp/tessera_fuzz_XXXXXX";

static void fuzz_remove_input(void) { remove(fuzz_input_path); }

static const char *fuzz_input_file(const uint8_t *data, size_t size) {
  static int created = 0;
  if (!created) {
    int fd = mkstemp(fuzz_input_path);
    if (fd < 0)
      abort();
    close(fd);
    atexit(fuzz_remove_input);
    created = 1;
  }
  FILE *f = fopen(fuzz_input_path, "wb");
  if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0)
    abort();
  return fuzz_input_path;
}

#endif
