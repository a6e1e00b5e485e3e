/* Shared by the C tests: checks that name the failing call and the library's last
 * error, object names unique to one run, and a byte pattern for byte-exact checks.
 *
 * The Rust driver (tests/ffi_c.rs) builds each test with gcc and ASan + UBSan, sets
 * WEFT_TEST_PREFIX to a name no other run uses, and removes what a failed run left behind. */
#ifndef WEFT_TEST_CHECK_H
#define WEFT_TEST_CHECK_H

#include "weft.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static unsigned long checks_passed;

#define FAIL(...)                                                                          \
    do {                                                                                   \
        fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);                                    \
        fprintf(stderr, __VA_ARGS__);                                                      \
        fputc('\n', stderr);                                                               \
        exit(1);                                                                           \
    } while (0)

#define CHECK(cond)                                                                        \
    do {                                                                                   \
        if (!(cond)) FAIL("check failed: %s", #cond);                                      \
        checks_passed++;                                                                   \
    } while (0)

/* Runs `call` and requires the status `want`. */
#define EXPECT(call, want)                                                                 \
    do {                                                                                   \
        weft_status rc_ = (call);                                                          \
        weft_status want_ = (want);                                                        \
        if (rc_ != want_)                                                                  \
            FAIL("%s\n  returned %d (%s), expected %d (%s)\n  last error: %s", #call, rc_,  \
                 weft_error_string(rc_), want_, weft_error_string(want_),                  \
                 weft_last_error_message());                                               \
        checks_passed++;                                                                   \
    } while (0)

#define OK(call) EXPECT(call, WEFT_OK)

/* The last error message must mention `needle`. */
#define EXPECT_MESSAGE(needle)                                                             \
    do {                                                                                   \
        const char *msg_ = weft_last_error_message();                                      \
        if (strstr(msg_, (needle)) == NULL)                                                \
            FAIL("last error %s does not mention \"%s\"", msg_, (needle));                 \
        checks_passed++;                                                                   \
    } while (0)

#define RUN(test)                                                                          \
    do {                                                                                   \
        fprintf(stderr, "-- %s\n", #test);                                                 \
        test();                                                                            \
    } while (0)

/* Writes "PREFIX-TAG" into buf: a name unique to this run. */
static inline void unique_name(char *buf, size_t size, const char *tag) {
    const char *prefix = getenv("WEFT_TEST_PREFIX");
    int n = prefix ? snprintf(buf, size, "%s-%s", prefix, tag)
                   : snprintf(buf, size, "cffi-%ld-%s", (long)getpid(), tag);
    if (n < 0 || (size_t)n >= size) FAIL("name for %s does not fit", tag);
}

/* The byte at offset i of pattern `seed`: every record of a test differs from the others. */
static inline uint8_t pattern_byte(uint64_t seed, size_t i) {
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + i * 0xBF58476D1CE4E5B9ull;
    x ^= x >> 29;
    return (uint8_t)(x ^ (x >> 17));
}

static inline void fill(uint8_t *p, size_t len, uint64_t seed) {
    for (size_t i = 0; i < len; i++) p[i] = pattern_byte(seed, i);
}

/* Whether len bytes at p are pattern `seed`; reports the first difference. */
static inline int matches(const uint8_t *p, size_t len, uint64_t seed) {
    for (size_t i = 0; i < len; i++) {
        if (p[i] != pattern_byte(seed, i)) {
            fprintf(stderr, "record %llu differs at byte %zu of %zu\n", (unsigned long long)seed,
                    i, len);
            return 0;
        }
    }
    return 1;
}

/* A record length for record i: 0 to max - 1, most of them small, some near max. */
static inline size_t length_of(uint64_t i, size_t max) {
    uint64_t x = i * 0x2545F4914F6CDD1Dull + 7;
    x ^= x >> 31;
    return (i % 13 == 0) ? (size_t)(max - 1 - (x % 64)) : (size_t)(x % (max / 8 + 1));
}

static inline void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

static inline void done(const char *suite) {
    fprintf(stderr, "%s: %lu checks passed\n", suite, checks_passed);
    printf("ok %s %lu\n", suite, checks_passed);
}

#endif
