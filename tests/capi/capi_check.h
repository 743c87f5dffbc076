/* SPDX-License-Identifier: Apache-2.0 */
/* A small harness for the C API tests (written in C11): checks that print the file, line and the last
 * error, and a case runner that fails a case which leaves an fd open. */
#ifndef ET_CAPI_CHECK_H
#define ET_CAPI_CHECK_H

#include <edgetensor/c/edgetensor_c.h>

#include <dirent.h>
#include <stdio.h>
#include <string.h>

#define CHECK(cond)                                                                                   \
  do {                                                                                                \
    if (!(cond)) {                                                                                    \
      fprintf(stderr, "%s:%d: CHECK(%s) failed; last error: %s\n", __FILE__, __LINE__, #cond,         \
              et_last_error_message());                                                               \
      return 1;                                                                                       \
    }                                                                                                 \
  } while (0)

/* A call that must give `expected` (an et_status). */
#define CHECK_STATUS(expected, call)                                                                  \
  do {                                                                                                \
    et_status check_status_ = (call);                                                                 \
    if (check_status_ != (expected)) {                                                                \
      fprintf(stderr, "%s:%d: %s gave %s, expected %s; last error: %s\n", __FILE__, __LINE__, #call,   \
              et_status_name(check_status_), et_status_name(expected), et_last_error_message());       \
      return 1;                                                                                       \
    }                                                                                                 \
  } while (0)
#define CHECK_OK(call) CHECK_STATUS(ET_OK, call)

/* The last error's message contains `text`. */
#define CHECK_MESSAGE(text)                                                                           \
  do {                                                                                                \
    if (strstr(et_last_error_message(), (text)) == NULL) {                                            \
      fprintf(stderr, "%s:%d: last error '%s' does not mention '%s'\n", __FILE__, __LINE__,            \
              et_last_error_message(), (text));                                                       \
      return 1;                                                                                       \
    }                                                                                                 \
  } while (0)

/* Open fds of this process (/proc/self/fd, less the directory's own fd). */
static inline int open_fd_count(void) {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == NULL) return -1;
  int n = 0;
  while (readdir(dir) != NULL) ++n;
  closedir(dir);
  return n - 3; /* ".", "..", the directory's fd */
}

/* What a case returns when it cannot run here (ctest SKIP_RETURN_CODE): it prints why first. */
#define CASE_SKIPPED 77

typedef int (*case_fn)(void);
struct test_case {
  const char* name;
  case_fn fn;
};

/* Runs the case named argv[1] (or every case): each must return 0 (or CASE_SKIPPED) and leave as many fds open
 * as before. Returns CASE_SKIPPED when nothing failed and a case was skipped. */
static inline int run_cases(const struct test_case* cases, size_t count, int argc, char** argv) {
  int failed = 0, ran = 0, skipped = 0;
  for (size_t i = 0; i < count; ++i) {
    if (argc > 1 && strcmp(argv[1], cases[i].name) != 0) continue;
    ++ran;
    const int fds_before = open_fd_count();
    const int rc = cases[i].fn();
    const int fds_after = open_fd_count();
    if (rc == CASE_SKIPPED && fds_before == fds_after) {
      printf("skipped %s\n", cases[i].name);
      ++skipped;
    } else if (rc != 0) {
      fprintf(stderr, "FAILED %s\n", cases[i].name);
      ++failed;
    } else if (fds_before != fds_after) {
      fprintf(stderr, "FAILED %s: %d fds open before, %d after\n", cases[i].name, fds_before, fds_after);
      ++failed;
    } else {
      printf("ok %s\n", cases[i].name);
    }
  }
  if (ran == 0) {
    fprintf(stderr, "no case named '%s'\n", argc > 1 ? argv[1] : "");
    return 1;
  }
  if (failed != 0) return 1;
  return skipped != 0 ? CASE_SKIPPED : 0;
}

#endif /* ET_CAPI_CHECK_H */
