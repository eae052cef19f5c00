/* Standalone driver for the fuzz targets without libFuzzer: feeds every file named on the
 * command line (and every file inside a directory named there) to LLVMFuzzerTestOneInput, so a
 * corpus can be replayed in an ordinary or sanitizer build. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Runs the target on one file; returns 0 on success, 1 if the file cannot be read. */
static int replay_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "%s: cannot open\n", path);
    return 1;
  }
  size_t size = 0, capacity = 4096;
  uint8_t *data = malloc(capacity);
  size_t got;
  while (data && (got = fread(data + size, 1, capacity - size, f)) > 0) {
    size += got;
    if (size == capacity) {
      uint8_t *bigger = realloc(data, capacity * 2);
      if (!bigger)
        free(data);
      data = bigger;
      capacity *= 2;
    }
  }
  fclose(f);
  if (!data) {
    fprintf(stderr, "%s: out of memory\n", path);
    return 1;
  }
  printf("replay %s (%zu bytes)\n", path, size);
  LLVMFuzzerTestOneInput(data, size);
  free(data);
  return 0;
}

static int replay_path(const char *path, int *count) {
  struct stat info;
  if (stat(path, &info) != 0) {
    fprintf(stderr, "%s: not found\n", path);
    return 1;
  }
  if (!S_ISDIR(info.st_mode)) {
    (*count)++;
    return replay_file(path);
  }
  DIR *dir = opendir(path);
  if (!dir) {
    fprintf(stderr, "%s: cannot open directory\n", path);
    return 1;
  }
  int errors = 0;
  struct dirent *entry;
  while ((entry = readdir(dir)) != NULL) {
    if (entry->d_name[0] == '.')
      continue;
    size_t length = strlen(path) + strlen(entry->d_name) + 2;
    char *child = malloc(length);
    if (!child) {
      errors++;
      break;
    }
    snprintf(child, length, "%s/%s", path, entry->d_name);
    errors += replay_path(child, count);
    free(child);
  }
  closedir(dir);
  return errors;
}

int main(int argc, char **argv) {
  int errors = 0, count = 0;
  for (int k = 1; k < argc; k++)
    errors += replay_path(argv[k], &count);
  printf("replayed %d input(s), %d unreadable\n", count, errors);
  return errors || count == 0 ? 1 : 0;
}
