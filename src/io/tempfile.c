/* Temporary-file helpers: writers write to "path.tmp" and rename it over "path" on success, so a
 * failed write never leaves a partial output file. */
#include "tessera/io.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

FILE *ts_open_temp(const char *path, char *tmp_path, size_t tmp_size) {
  int needed = snprintf(tmp_path, tmp_size, "%s.tmp", path);
  if (needed < 0 || (size_t)needed >= tmp_size) {
    ts_error(TS_ERR_IO, "%s: path too long", path);
    return NULL;
  }
  FILE *f = fopen(tmp_path, "wb");
  if (!f)
    ts_error(TS_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
  return f;
}

ts_status ts_commit_temp(FILE *f, const char *tmp_path, const char *path) {
  int failed = fflush(f) != 0 || ferror(f);
  int saved_errno = errno;
  if (fclose(f) != 0 && !failed) {
    failed = 1;
    saved_errno = errno;
  }
  if (!failed && rename(tmp_path, path) != 0) {
    failed = 1;
    saved_errno = errno;
  }
  if (failed) {
    remove(tmp_path);
    return ts_error(TS_ERR_IO, "%s: cannot write: %s", path,
                    strerror(saved_errno ? saved_errno : EIO));
  }
  return TS_OK;
}
