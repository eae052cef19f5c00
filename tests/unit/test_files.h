/* Small file helpers shared by the unit tests: write a text file, read one back whole, ask
 * whether a file exists. */
#ifndef TESSERA_TESTS_TEST_FILES_H
#define TESSERA_TESTS_TEST_FILES_H

#include <stdio.h>
#include <stdlib.h>

static inline void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "wb");
  fputs(text, f);
  fclose(f);
}

/* Reads a whole file into a NUL-terminated malloc'ed string (NULL if it cannot be read). */
static inline char *read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *text = malloc((size_t)size + 1);
  size_t got = fread(text, 1, (size_t)size, f);
  text[got] = '\0';
  fclose(f);
  return text;
}

static inline int file_exists(const char *path) {
  FILE *f = fopen(path, "rb");
  if (f)
    fclose(f);
  return f != NULL;
}

#endif
