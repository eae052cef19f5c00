/* Temporary-file helpers: a writer writes to a new, uniquely named hidden file beside its output
 * (.NAME.XXXXXX), which is fsynced, renamed over the output and followed by an fsync of the
 * directory, so the output's name only ever holds a complete file and a failed write leaves
 * neither a partial output nor the temporary. TESSERA_TEST_FAIL_WRITE=N (tests only) makes the
 * N-th commit of the process fail as if the disk were full. */
#define _POSIX_C_SOURCE 200809L /* fdopen, fsync, clock_gettime */
#include "tessera/io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Creates the temporary of path (O_EXCL, mode 0666 less the umask); its name goes to tmp_path.
 * Returns the open descriptor, or -1 with the error set and tmp_path empty. */
static int create_temp(const char *path, char *tmp_path, size_t tmp_size) {
  static const char letters[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  static atomic_uint counter;
  const char *slash = strrchr(path, '/');
  int dir_len = slash ? (int)(slash - path + 1) : 0;
  const char *name = path + dir_len;
  int needed = snprintf(tmp_path, tmp_size, "%.*s.%s.XXXXXX", dir_len, path, name);
  if (!name[0] || needed < 0 || (size_t)needed >= tmp_size) {
    ts_error(TS_ERR_IO, "%s: %s", path, name[0] ? "path too long" : "not a file name");
    if (tmp_size > 0)
      tmp_path[0] = '\0';
    return -1;
  }
  char *x = tmp_path + needed - 6;
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  for (int attempt = 0; attempt < 100; attempt++) {
    /* 64-bit mix of the process, a counter and the clock: a new name on every attempt */
    unsigned long long v =
        ((unsigned long long)getpid() << 32) ^
        (unsigned long long)atomic_fetch_add(&counter, 1) * 0x9E3779B97F4A7C15ull ^
        (unsigned long long)now.tv_nsec ^ (unsigned long long)now.tv_sec << 20;
    v ^= v >> 31, v *= 0xBF58476D1CE4E5B9ull, v ^= v >> 29;
    for (int c = 0; c < 6; c++, v /= 62)
      x[c] = letters[v % 62];
    int fd = open(tmp_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0 || errno != EEXIST) {
      if (fd < 0) {
        ts_error(TS_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
        tmp_path[0] = '\0';
      }
      return fd;
    }
  }
  ts_error(TS_ERR_IO, "%s: cannot write: no free temporary name", path);
  tmp_path[0] = '\0';
  return -1;
}

/* Whether this commit is the one TESSERA_TEST_FAIL_WRITE names (counted from 1). */
static int test_fail_write(void) {
  static atomic_long commits;
  const char *n = getenv("TESSERA_TEST_FAIL_WRITE");
  long count = atomic_fetch_add(&commits, 1) + 1;
  return n && atol(n) == count;
}

/* fsync of the directory holding path; filesystems that cannot sync a directory (EINVAL) pass. */
static int sync_dir(const char *path) {
  char dir[4096];
  const char *slash = strrchr(path, '/');
  int len = slash ? (int)(slash - path) : 1;
  snprintf(dir, sizeof dir, "%.*s", len ? len : 1, slash ? path : ".");
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  int failed = fsync(fd) != 0 && errno != EINVAL;
  int saved = errno;
  close(fd);
  errno = saved;
  return failed ? -1 : 0;
}

/* Renames the synced temporary over path and syncs the directory; on failure removes the
 * temporary and reports errno (EIO when none). */
static ts_status finish(int failed, int saved_errno, const char *tmp_path, const char *path) {
  if (!failed && test_fail_write()) {
    failed = 1;
    saved_errno = ENOSPC;
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
  if (sync_dir(path) != 0)
    return ts_error(TS_ERR_IO, "%s: cannot sync its directory: %s", path, strerror(errno));
  return TS_OK;
}

FILE *ts_open_temp(const char *path, char *tmp_path, size_t tmp_size) {
  int fd = create_temp(path, tmp_path, tmp_size);
  if (fd < 0)
    return NULL;
  FILE *f = fdopen(fd, "wb");
  if (!f) {
    ts_error(TS_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
    close(fd);
    remove(tmp_path);
  }
  return f;
}

ts_status ts_commit_temp(FILE *f, const char *tmp_path, const char *path) {
  int failed = fflush(f) != 0 || ferror(f) || fsync(fileno(f)) != 0;
  int saved_errno = failed ? errno : 0;
  if (fclose(f) != 0 && !failed) {
    failed = 1;
    saved_errno = errno;
  }
  return finish(failed, saved_errno, tmp_path, path);
}

ts_status ts_make_temp(const char *path, char *tmp_path, size_t tmp_size) {
  int fd = create_temp(path, tmp_path, tmp_size);
  if (fd < 0)
    return TS_ERR_IO;
  close(fd);
  return TS_OK;
}

ts_status ts_commit_temp_file(const char *tmp_path, const char *path) {
  int fd = open(tmp_path, O_RDONLY | O_CLOEXEC);
  int failed = fd < 0 || fsync(fd) != 0;
  int saved_errno = failed ? errno : 0;
  if (fd >= 0)
    close(fd);
  return finish(failed, saved_errno, tmp_path, path);
}
