/* Small file helpers shared by the unit tests: write a text file, read one back whole, ask
 * whether a file exists, count the lines of one, count a writer's temporary files. */
#ifndef TESSERA_TESTS_TEST_FILES_H
#define TESSERA_TESTS_TEST_FILES_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* dir/name in one of a few rotating buffers (several may be in use at once). */
static inline const char *path_in(const char *dir, const char *name) {
  static char buffers[8][512];
  static int next;
  char *b = buffers[next++ % 8];
  snprintf(b, sizeof buffers[0], "%s/%s", dir, name);
  return b;
}

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

/* The number of lines of a text file, and its first line (without the newline) in first. */
static inline int file_lines(const char *path, char *first, size_t size) {
  char *text = read_file(path);
  int lines = 0;
  first[0] = '\0';
  for (char *p = text; p && *p; p++)
    lines += *p == '\n';
  if (text)
    snprintf(first, size, "%.*s", (int)strcspn(text, "\n"), text);
  free(text);
  return lines;
}

/* The temporary files (.NAME.XXXXXX) of the output NAME in dir: what a failed or unfinished
 * write would leave behind. */
static inline int temp_files(const char *dir, const char *name) {
  char prefix[256];
  snprintf(prefix, sizeof prefix, ".%s.", name);
  DIR *d = opendir(dir);
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d));)
    n += strncmp(e->d_name, prefix, strlen(prefix)) == 0 && strlen(e->d_name) == strlen(prefix) + 6;
  if (d)
    closedir(d);
  return n;
}

/* The end of a test that wrote into the temporary directory dir: removed when nothing failed,
 * kept (and named) otherwise; the failures are counted out. Returns the exit code. */
static inline int finish_in_dir(const char *dir, int failed) {
  if (failed == 0) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
      printf("could not remove %s\n", dir);
  } else {
    printf("files kept in %s\n", dir);
  }
  printf("%d failure(s)\n", failed);
  return failed != 0;
}

#endif
