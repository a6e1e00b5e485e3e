/* The byte stream from C: writer and reader, every form of write and read, grants lent by
 * their handle, byte-exact data across the wrap, and every error reachable from C. */
#include "check.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <sys/mman.h>

/* A writer and its reader on a fresh name. */
static void pair(const char *tag, size_t capacity, const weft_stream_options *opts,
                 weft_stream_writer_t **w, weft_stream_reader_t **r) {
    char name[160];
    unique_name(name, sizeof name, tag);
    OK(weft_stream_writer_create(name, capacity, opts, w));
    OK(weft_stream_reader_open(name, r));
}

/* Creating a stream with these options is refused as an invalid argument, and no handle is
 * made. */
static void refused(const char *tag, size_t capacity, const weft_stream_options *opts) {
    char name[160];
    unique_name(name, sizeof name, tag);
    weft_stream_writer_t *bad = NULL;
    EXPECT(weft_stream_writer_create(name, capacity, opts, &bad), WEFT_ERROR_INVALID_ARGUMENT);
    CHECK(bad == NULL);
}

/* Single thread: write until full, drain, repeat; records of every size, written by copy and
 * in place, cross the wrap many times and come back byte-exact. */
static void byte_exact_across_the_wrap(void) {
    weft_stream_writer_t *w = NULL;
    weft_stream_reader_t *r = NULL;
    pair("exact", 1 << 16, NULL, &w, &r);
    size_t max = 0;
    OK(weft_stream_writer_max_record_len(w, &max));
    CHECK(max >= 4096 && max <= (1 << 15));

    static uint8_t buf[1 << 15];
    const uint64_t records = 6000;
    uint64_t sent = 0, got = 0, fulls = 0;
    while (got < records) {
        while (sent < records) {
            size_t len = length_of(sent, 4096);
            weft_status rc;
            if (sent % 2 == 0) {
                fill(buf, len, sent);
                rc = weft_stream_writer_try_write(w, buf, len);
            } else {
                uint8_t *room = NULL;
                rc = weft_stream_writer_try_reserve(w, len + 16, &room);
                if (rc == WEFT_OK) {
                    fill(room, len, sent); /* reserve more than needed, commit less */
                    OK(weft_stream_writer_commit(w, len));
                }
            }
            if (rc == WEFT_ERROR_FULL) {
                fulls++;
                break;
            }
            OK(rc);
            sent++;
        }
        for (;;) {
            const uint8_t *data = NULL;
            size_t len = 0;
            weft_status rc = weft_stream_reader_try_read(r, &data, &len);
            if (rc == WEFT_ERROR_EMPTY) break;
            OK(rc);
            CHECK(len == length_of(got, 4096));
            CHECK(matches(data, len, got));
            OK(weft_stream_reader_release(r));
            got++;
        }
    }
    CHECK(fulls > 10); /* the stream filled and wrapped many times */
    OK(weft_stream_writer_close(&w));
    OK(weft_stream_reader_close(&r));
    CHECK(w == NULL && r == NULL);
}

struct blocking_args {
    weft_stream_writer_t *w;
    uint64_t records;
};

static void *blocking_writer(void *p) {
    struct blocking_args *a = p;
    static uint8_t buf[8192];
    for (uint64_t i = 0; i < a->records; i++) {
        size_t len = length_of(i, 8192);
        if (i % 3 == 0) {
            uint8_t *room = NULL;
            OK(weft_stream_writer_reserve(a->w, len, &room));
            fill(room, len, i);
            OK(weft_stream_writer_commit(a->w, len));
        } else if (i % 3 == 1) {
            fill(buf, len, i);
            OK(weft_stream_writer_write(a->w, buf, len));
        } else {
            uint8_t *room = NULL;
            OK(weft_stream_writer_reserve_timeout(a->w, len, 10000, &room));
            fill(room, len, i);
            OK(weft_stream_writer_commit(a->w, len));
        }
    }
    /* The writer moved to this thread; closing it here lets the reader see CLOSED. */
    OK(weft_stream_writer_close(&a->w));
    return NULL;
}

/* Two threads with the blocking forms (the writer handle moves to another thread): every
 * record arrives byte-exact, then CLOSED. */
static void blocking_between_threads(void) {
    weft_stream_writer_t *w = NULL;
    weft_stream_reader_t *r = NULL;
    weft_stream_options opts = {0};
    opts.wait = WEFT_WAIT_PARK;
    pair("blocking", 1 << 15, &opts, &w, &r);
    OK(weft_stream_reader_set_wait(r, WEFT_WAIT_ADAPTIVE));
    struct blocking_args args = {w, 5000};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, blocking_writer, &args) == 0);
    for (uint64_t i = 0; i < args.records; i++) {
        const uint8_t *data = NULL;
        size_t len = 0;
        if (i % 2) {
            OK(weft_stream_reader_read(r, &data, &len));
        } else {
            OK(weft_stream_reader_read_timeout(r, 10000, &data, &len));
        }
        CHECK(len == length_of(i, 8192));
        CHECK(matches(data, len, i));
        OK(weft_stream_reader_release(r));
    }
    const uint8_t *data = NULL;
    size_t len = 0;
    EXPECT(weft_stream_reader_read_timeout(r, 10000, &data, &len), WEFT_ERROR_CLOSED);
    CHECK(pthread_join(t, NULL) == 0);
    CHECK(args.w == NULL);
    OK(weft_stream_reader_close(&r));
}

/* Page-aligned records: a reservation starts on a 4096-byte boundary. */
static void aligned_records(void) {
    weft_stream_writer_t *w = NULL;
    weft_stream_reader_t *r = NULL;
    weft_stream_options opts = {0};
    opts.align = 4096;
    pair("aligned", 1 << 20, &opts, &w, &r);
    for (int i = 0; i < 4; i++) {
        uint8_t *room = NULL;
        OK(weft_stream_writer_reserve(w, 10000, &room));
        CHECK(((uintptr_t)room % 4096) == 0);
        fill(room, 10000, 100 + i);
        OK(weft_stream_writer_commit(w, 10000));
    }
    for (int i = 0; i < 4; i++) {
        const uint8_t *data = NULL;
        size_t len = 0;
        OK(weft_stream_reader_read(r, &data, &len));
        CHECK(((uintptr_t)data % 4096) == 0);
        CHECK(len == 10000 && matches(data, len, 100 + i));
        OK(weft_stream_reader_release(r));
    }
    opts.align = 3;
    refused("badalign", 1 << 16, &opts);
    OK(weft_stream_writer_close(&w));
    OK(weft_stream_reader_close(&r));
}

/* Writes and reads `n` records of 256 bytes in lockstep; returns the span of the addresses
 * the reader saw them at. */
static size_t lockstep_span(const char *tag, size_t capacity, const weft_stream_options *opts,
                            int n) {
    weft_stream_writer_t *w = NULL;
    weft_stream_reader_t *r = NULL;
    pair(tag, capacity, opts, &w, &r);
    uint8_t msg[256];
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (int i = 0; i < n; i++) {
        fill(msg, sizeof msg, i);
        OK(weft_stream_writer_write(w, msg, sizeof msg));
        const uint8_t *data = NULL;
        size_t len = 0;
        OK(weft_stream_reader_read(r, &data, &len));
        CHECK(len == sizeof msg && matches(data, len, i));
        if ((uintptr_t)data < lo) lo = (uintptr_t)data;
        if ((uintptr_t)data + len > hi) hi = (uintptr_t)data + len;
        OK(weft_stream_reader_release(r));
    }
    OK(weft_stream_writer_close(&w));
    OK(weft_stream_reader_close(&r));
    return hi - lo;
}

/* The hot window: a reader that keeps up sees its records inside it; SIZE_MAX turns it off,
 * 0 is the default (none below 16 MiB). */
static void hot_window(void) {
    weft_stream_options opts = {0};
    opts.hot_window = 16 << 10;
    /* The record that reaches the window is the last before the wrap: 264 bytes framed. */
    CHECK(lockstep_span("hwsmall", 1 << 20, &opts, 20000) <= (16 << 10) + 264);
    opts.hot_window = SIZE_MAX;
    CHECK(lockstep_span("hwoff", 1 << 20, &opts, 20000) > (1 << 20) - 4096);
    opts.hot_window = 0;
    CHECK(lockstep_span("hwdefault", 1 << 20, &opts, 20000) > (1 << 20) - 4096);
    opts.hot_window = 100;
    refused("hwtiny", 1 << 20, &opts);
}

/* Empty records are records; a NULL data pointer is fine with length 0 and refused otherwise. */
static void empty_records_and_null_data(void) {
    weft_stream_writer_t *w = NULL;
    weft_stream_reader_t *r = NULL;
    pair("empty", 4096, NULL, &w, &r);
    OK(weft_stream_writer_write(w, NULL, 0));
    EXPECT(weft_stream_writer_write(w, NULL, 5), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT_MESSAGE("data");
    EXPECT(weft_stream_writer_try_write(w, NULL, 1), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_stream_writer_write_timeout(w, NULL, 1, 10), WEFT_ERROR_INVALID_ARGUMENT);
    const uint8_t *data = (const uint8_t *)"x";
    size_t len = 99;
    OK(weft_stream_reader_try_read(r, &data, &len));
    CHECK(len == 0);
    OK(weft_stream_reader_release(r));
    EXPECT(weft_stream_reader_try_read(r, &data, &len), WEFT_ERROR_EMPTY);
    OK(weft_stream_writer_close(&w));
    OK(weft_stream_reader_close(&r));
}

/* Deferred records: unseen until a flush (or a plain write) publishes them, in order; the
 * close publishes the rest. */
static void deferred_records(void) {
    weft_stream_writer_t *w = NULL;
    weft_stream_reader_t *r = NULL;
    pair("deferred", 1 << 16, NULL, &w, &r);
    const uint8_t *data = NULL;
    size_t len = 0;
    OK(weft_stream_writer_write_deferred(w, (const uint8_t *)"one", 3));
    OK(weft_stream_writer_write_deferred(w, (const uint8_t *)"two", 3));
    EXPECT(weft_stream_reader_try_read(r, &data, &len), WEFT_ERROR_EMPTY);
    OK(weft_stream_writer_flush(w));
    OK(weft_stream_reader_try_read(r, &data, &len));
    CHECK(len == 3 && memcmp(data, "one", 3) == 0);
    OK(weft_stream_reader_release(r));
    OK(weft_stream_reader_try_read(r, &data, &len));
    CHECK(len == 3 && memcmp(data, "two", 3) == 0);
    OK(weft_stream_reader_release(r));
    OK(weft_stream_writer_flush(w)); /* nothing waits: nothing happens */
    EXPECT(weft_stream_writer_write_deferred(w, NULL, 1), WEFT_ERROR_INVALID_ARGUMENT);
    OK(weft_stream_writer_write_deferred(w, (const uint8_t *)"three", 5));
    OK(weft_stream_writer_write(w, (const uint8_t *)"four", 4));
    OK(weft_stream_reader_try_read(r, &data, &len));
    CHECK(len == 5 && memcmp(data, "three", 5) == 0);
    OK(weft_stream_reader_release(r));
    OK(weft_stream_reader_try_read(r, &data, &len));
    CHECK(len == 4 && memcmp(data, "four", 4) == 0);
    OK(weft_stream_reader_release(r));
    OK(weft_stream_writer_write_deferred(w, (const uint8_t *)"five", 4));
    OK(weft_stream_writer_close(&w));
    OK(weft_stream_reader_try_read(r, &data, &len));
    CHECK(len == 4 && memcmp(data, "five", 4) == 0);
    OK(weft_stream_reader_release(r));
    EXPECT(weft_stream_reader_try_read(r, &data, &len), WEFT_ERROR_CLOSED);
    EXPECT(weft_stream_writer_flush(NULL), WEFT_ERROR_INVALID_ARGUMENT);
    OK(weft_stream_reader_close(&r));

    /* The try and timeout forms: FULL and TIMEOUT once no room is left, and what was deferred
     * before is published by then. */
    pair("deferred-full", 4096, NULL, &w, &r);
    static uint8_t buf[500];
    memset(buf, 9, sizeof buf);
    uint64_t n = 0;
    weft_status rc;
    while ((rc = weft_stream_writer_try_write_deferred(w, buf, sizeof buf)) == WEFT_OK) n++;
    EXPECT(rc, WEFT_ERROR_FULL);
    CHECK(n >= 4);
    EXPECT(weft_stream_writer_write_deferred_timeout(w, buf, sizeof buf, 10), WEFT_ERROR_TIMEOUT);
    for (uint64_t i = 0; i < n; i++) {
        OK(weft_stream_reader_try_read(r, &data, &len));
        CHECK(len == sizeof buf && data[0] == 9);
        OK(weft_stream_reader_release(r));
    }
    EXPECT(weft_stream_reader_try_read(r, &data, &len), WEFT_ERROR_EMPTY);
    OK(weft_stream_writer_write_deferred_timeout(w, buf, sizeof buf, 1000));
    OK(weft_stream_writer_close(&w));
    OK(weft_stream_reader_try_read(r, &data, &len));
    OK(weft_stream_reader_release(r));
    OK(weft_stream_reader_close(&r));
}

/* Backpressure and time limits: FULL, TIMEOUT, EMPTY; too large at once. */
static void full_empty_timeout_too_large(void) {
    weft_stream_writer_t *w = NULL;
    weft_stream_reader_t *r = NULL;
    pair("full", 4096, NULL, &w, &r);
    size_t max = 0;
    OK(weft_stream_writer_max_record_len(w, &max));
    static uint8_t buf[8192];
    fill(buf, sizeof buf, 7);
    EXPECT(weft_stream_writer_write(w, buf, max + 1), WEFT_ERROR_TOO_LARGE);
    EXPECT_MESSAGE("can ever hold");
    uint8_t *room = NULL;
    EXPECT(weft_stream_writer_reserve(w, max + 1, &room), WEFT_ERROR_TOO_LARGE);
    EXPECT(weft_stream_writer_reserve(w, SIZE_MAX, &room), WEFT_ERROR_TOO_LARGE);
    CHECK(room == NULL);
    /* A length no buffer can have is too large, refused before anything reads the data; NULL
     * data with any length but 0 is a NULL argument first, whatever the length. */
    EXPECT(weft_stream_writer_write(w, buf, SIZE_MAX), WEFT_ERROR_TOO_LARGE);
    EXPECT(weft_stream_writer_try_write_deferred(w, buf, SIZE_MAX), WEFT_ERROR_TOO_LARGE);
    EXPECT(weft_stream_writer_write(w, NULL, SIZE_MAX), WEFT_ERROR_INVALID_ARGUMENT);
    int written = 0;
    while (weft_stream_writer_try_write(w, buf, 500) == WEFT_OK) written++;
    CHECK(written >= 4);
    EXPECT(weft_stream_writer_try_write(w, buf, 500), WEFT_ERROR_FULL);
    EXPECT(weft_stream_writer_write_timeout(w, buf, 500, 20), WEFT_ERROR_TIMEOUT);
    EXPECT(weft_stream_writer_try_reserve(w, 500, &room), WEFT_ERROR_FULL);
    EXPECT(weft_stream_writer_reserve_timeout(w, 500, 20, &room), WEFT_ERROR_TIMEOUT);
    CHECK(room == NULL);
    for (int i = 0; i < written; i++) {
        const uint8_t *data = NULL;
        size_t len = 0;
        /* The largest timeout is no deadline; with data there, it returns at once. */
        OK(weft_stream_reader_read_timeout(r, UINT64_MAX, &data, &len));
        CHECK(len == 500 && memcmp(data, buf, 500) == 0);
        OK(weft_stream_reader_release(r));
    }
    const uint8_t *data = NULL;
    size_t len = 0;
    EXPECT(weft_stream_reader_try_read(r, &data, &len), WEFT_ERROR_EMPTY);
    EXPECT(weft_stream_reader_read_timeout(r, 20, &data, &len), WEFT_ERROR_TIMEOUT);
    OK(weft_stream_writer_close(&w));
    OK(weft_stream_reader_close(&r));
}

/* A handle lending a grant refuses everything else; nothing lent cannot be released. */
static void grant_state_rules(void) {
    weft_stream_writer_t *w = NULL;
    weft_stream_reader_t *r = NULL;
    pair("state", 1 << 16, NULL, &w, &r);
    uint8_t one = 1;
    size_t max = 0;

    EXPECT(weft_stream_writer_commit(w, 0), WEFT_ERROR_STATE);
    EXPECT(weft_stream_writer_abandon(w), WEFT_ERROR_STATE);
    uint8_t *room = NULL;
    OK(weft_stream_writer_reserve(w, 8, &room));
    EXPECT(weft_stream_writer_write(w, &one, 1), WEFT_ERROR_STATE);
    EXPECT_MESSAGE("lending");
    EXPECT(weft_stream_writer_try_write(w, &one, 1), WEFT_ERROR_STATE);
    EXPECT(weft_stream_writer_reserve(w, 8, &room), WEFT_ERROR_STATE);
    EXPECT(weft_stream_writer_max_record_len(w, &max), WEFT_ERROR_STATE);
    EXPECT(weft_stream_writer_set_wait(w, WEFT_WAIT_PARK), WEFT_ERROR_STATE);
    EXPECT(weft_stream_writer_commit(w, 9), WEFT_ERROR_INVALID_ARGUMENT); /* more than reserved */
    memcpy(room, "12345678", 8);                                           /* still lent */
    OK(weft_stream_writer_commit(w, 8));
    OK(weft_stream_writer_reserve(w, 8, &room));
    OK(weft_stream_writer_abandon(w));
    EXPECT(weft_stream_writer_abandon(w), WEFT_ERROR_STATE);
    OK(weft_stream_writer_write(w, (const uint8_t *)"after", 5));

    EXPECT(weft_stream_reader_release(r), WEFT_ERROR_STATE);
    const uint8_t *data = NULL;
    size_t len = 0;
    OK(weft_stream_reader_read(r, &data, &len));
    CHECK(len == 8 && memcmp(data, "12345678", 8) == 0);
    const uint8_t *data2 = NULL;
    EXPECT(weft_stream_reader_try_read(r, &data2, &len), WEFT_ERROR_STATE);
    EXPECT(weft_stream_reader_read_timeout(r, 10, &data2, &len), WEFT_ERROR_STATE);
    EXPECT(weft_stream_reader_set_wait(r, WEFT_WAIT_PARK), WEFT_ERROR_STATE);
    CHECK(data2 == NULL);
    OK(weft_stream_reader_release(r));
    EXPECT(weft_stream_reader_release(r), WEFT_ERROR_STATE); /* released twice */
    OK(weft_stream_reader_read(r, &data, &len));             /* the abandoned one is skipped */
    CHECK(len == 5 && memcmp(data, "after", 5) == 0);

    /* Closing a handle that lends: the grant is released (abandoned) first. */
    OK(weft_stream_reader_close(&r));
    OK(weft_stream_writer_reserve(w, 8, &room));
    OK(weft_stream_writer_close(&w));
    EXPECT(weft_stream_writer_close(&w), WEFT_ERROR_STATE); /* closed twice */
    EXPECT(weft_stream_reader_close(&r), WEFT_ERROR_STATE);
}

/* Every pointer argument is checked. */
static void null_pointers(void) {
    weft_stream_writer_t *w = NULL;
    weft_stream_reader_t *r = NULL;
    char name[160];
    unique_name(name, sizeof name, "nulls");
    EXPECT(weft_stream_writer_create(NULL, 4096, NULL, &w), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT_MESSAGE("name");
    EXPECT(weft_stream_writer_create(name, 4096, NULL, NULL), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT_MESSAGE("writer");
    EXPECT(weft_stream_reader_open(NULL, &r), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_stream_reader_open_timeout(NULL, 10, &r), WEFT_ERROR_INVALID_ARGUMENT);
    OK(weft_stream_writer_create(name, 4096, NULL, &w));
    EXPECT(weft_stream_reader_open(name, NULL), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_stream_reader_open_timeout(name, 10, NULL), WEFT_ERROR_INVALID_ARGUMENT);
    OK(weft_stream_reader_open(name, &r));

    uint8_t b = 0, *room = NULL;
    const uint8_t *data = NULL;
    size_t len = 0;
    EXPECT(weft_stream_writer_write(NULL, &b, 1), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_stream_writer_try_write(NULL, &b, 1), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_stream_writer_write_timeout(NULL, &b, 1, 1), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_stream_writer_reserve(NULL, 1, &room), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_stream_writer_reserve(w, 1, NULL), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_stream_writer_try_reserve(NULL, 1, &room), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_stream_writer_try_reserve(w, 1, NULL), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_stream_writer_reserve_timeout(NULL, 1, 1, &room), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_stream_writer_reserve_timeout(w, 1, 1, NULL), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_stream_writer_commit(NULL, 0), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_stream_writer_abandon(NULL), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_stream_writer_max_record_len(NULL, &len), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_stream_writer_max_record_len(w, NULL), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_stream_writer_set_wait(NULL, 0), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_stream_writer_close(NULL), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_stream_reader_read(NULL, &data, &len), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_stream_reader_read(r, NULL, &len), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_stream_reader_read(r, &data, NULL), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_stream_reader_try_read(NULL, &data, &len), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_stream_reader_try_read(r, NULL, &len), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_stream_reader_try_read(r, &data, NULL), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_stream_reader_read_timeout(NULL, 1, &data, &len), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_stream_reader_read_timeout(r, 1, NULL, &len), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_stream_reader_read_timeout(r, 1, &data, NULL), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_stream_reader_release(NULL), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_stream_reader_set_wait(NULL, 0), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_stream_reader_close(NULL), WEFT_ERROR_INVALID_ARGUMENT);

    /* A NULL out-pointer is refused before anything happens: nothing was read or written. */
    EXPECT(weft_stream_reader_try_read(r, &data, &len), WEFT_ERROR_EMPTY);
    OK(weft_stream_writer_close(&w));
    OK(weft_stream_reader_close(&r));
}

/* Names: refused before weft sees them (not terminated, not UTF-8) and by weft (characters,
 * length); missing objects, taken roles, another kind of object. */
static void names_and_objects(void) {
    weft_stream_writer_t *w = NULL;
    weft_stream_reader_t *r = NULL;
    EXPECT(weft_stream_writer_create("a/b", 4096, NULL, &w), WEFT_ERROR_INVALID_NAME);
    EXPECT(weft_stream_writer_create("", 4096, NULL, &w), WEFT_ERROR_INVALID_NAME);
    EXPECT(weft_stream_writer_create("..x", 4096, NULL, &w), WEFT_ERROR_INVALID_NAME);
    EXPECT(weft_stream_writer_create("caf\xc3\xa9", 4096, NULL, &w), WEFT_ERROR_INVALID_NAME);
    EXPECT(weft_stream_writer_create("bad\xff\xfe", 4096, NULL, &w), WEFT_ERROR_INVALID_NAME);
    EXPECT_MESSAGE("UTF-8");
    char long_name[202];
    memset(long_name, 'a', 201);
    long_name[201] = 0;
    EXPECT(weft_stream_writer_create(long_name, 4096, NULL, &w), WEFT_ERROR_INVALID_NAME);
    /* No NUL within 4096 bytes: refused without reading past the scan limit. */
    char *unterminated = malloc(5000);
    CHECK(unterminated != NULL);
    memset(unterminated, 'a', 5000);
    EXPECT(weft_stream_writer_create(unterminated, 4096, NULL, &w), WEFT_ERROR_INVALID_NAME);
    EXPECT_MESSAGE("NUL");
    EXPECT(weft_stream_reader_open(unterminated, &r), WEFT_ERROR_INVALID_NAME);
    free(unterminated);
    CHECK(w == NULL && r == NULL);

    char name[160];
    unique_name(name, sizeof name, "objects");
    EXPECT(weft_stream_reader_open(name, &r), WEFT_ERROR_NOT_FOUND);
    EXPECT_MESSAGE(name);
    EXPECT(weft_stream_reader_open_timeout(name, 20, &r), WEFT_ERROR_NOT_FOUND);
    EXPECT(weft_stream_writer_create(name, 0, NULL, &w), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_stream_writer_create(name, SIZE_MAX, NULL, &w), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT_MESSAGE("capacity");
    weft_stream_options opts = {0};
    opts.wait = 99;
    EXPECT(weft_stream_writer_create(name, 4096, &opts, &w), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT_MESSAGE("wait strategy");
    OK(weft_stream_writer_create(name, 4096, NULL, &w));
    weft_stream_writer_t *w2 = NULL;
    EXPECT(weft_stream_writer_create(name, 4096, NULL, &w2), WEFT_ERROR_IN_USE);
    OK(weft_stream_reader_open_timeout(name, 1000, &r));
    weft_stream_reader_t *r2 = NULL;
    EXPECT(weft_stream_reader_open(name, &r2), WEFT_ERROR_IN_USE);
    CHECK(w2 == NULL && r2 == NULL);
    EXPECT(weft_stream_writer_set_wait(w, 6), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_stream_reader_set_wait(r, -1), WEFT_ERROR_INVALID_ARGUMENT);
    OK(weft_stream_writer_set_wait(w, WEFT_WAIT_BUSY_SPIN));
    OK(weft_stream_writer_set_wait(w, WEFT_WAIT_DEFAULT));

    /* The writer closes: the reader drains, then CLOSED. */
    OK(weft_stream_writer_write(w, (const uint8_t *)"last", 4));
    OK(weft_stream_writer_close(&w));
    const uint8_t *data = NULL;
    size_t len = 0;
    OK(weft_stream_reader_try_read(r, &data, &len));
    CHECK(len == 4 && memcmp(data, "last", 4) == 0);
    OK(weft_stream_reader_release(r));
    EXPECT(weft_stream_reader_try_read(r, &data, &len), WEFT_ERROR_CLOSED);
    EXPECT(weft_stream_reader_read(r, &data, &len), WEFT_ERROR_CLOSED);
    OK(weft_stream_reader_close(&r));

    /* A pub/sub region is not a stream. */
    char region[160];
    unique_name(region, sizeof region, "notastream");
    weft_publisher_t *p = NULL;
    OK(weft_publisher_create(region, NULL, &p));
    EXPECT(weft_stream_reader_open(region, &r), WEFT_ERROR_WRONG_KIND);
    EXPECT(weft_stream_writer_create(region, 4096, NULL, &w), WEFT_ERROR_WRONG_KIND);
    OK(weft_publisher_close(&p));
}

/* A length past PTRDIFF_MAX is no buffer's length: too large, refused before anything reads
 * the data (not only SIZE_MAX). */
static void lengths_past_ptrdiff_max_are_too_large(void) {
    weft_stream_writer_t *w = NULL;
    weft_stream_reader_t *r = NULL;
    pair("huge", 4096, NULL, &w, &r);
    static uint8_t buf[16];
    const size_t huge = (size_t)PTRDIFF_MAX + 1;
    EXPECT(weft_stream_writer_write(w, buf, huge), WEFT_ERROR_TOO_LARGE);
    EXPECT_MESSAGE("larger than any buffer");
    EXPECT(weft_stream_writer_try_write(w, buf, SIZE_MAX - 1), WEFT_ERROR_TOO_LARGE);
    EXPECT(weft_stream_writer_write_deferred(w, buf, huge), WEFT_ERROR_TOO_LARGE);
    const uint8_t *data = NULL;
    size_t len = 0;
    EXPECT(weft_stream_reader_try_read(r, &data, &len), WEFT_ERROR_EMPTY);
    OK(weft_stream_writer_close(&w));
    OK(weft_stream_reader_close(&r));
}

/* A name is scanned for at most 4096 bytes: 4096 bytes with no NUL that end right before an
 * unreadable page are refused without a read past them. */
static void names_are_scanned_for_at_most_4096_bytes(void) {
    long page = sysconf(_SC_PAGESIZE);
    CHECK(page >= 4096);
    int fd = open("/dev/zero", O_RDWR);
    CHECK(fd >= 0);
    uint8_t *base = mmap(NULL, 2 * (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    CHECK(base != MAP_FAILED);
    close(fd);
    CHECK(mprotect(base + page, (size_t)page, PROT_NONE) == 0);
    char *name = (char *)base + page - 4096;
    memset(name, 'a', 4096);
    weft_stream_writer_t *w = NULL;
    weft_stream_reader_t *r = NULL;
    EXPECT(weft_stream_writer_create(name, 4096, NULL, &w), WEFT_ERROR_INVALID_NAME);
    EXPECT_MESSAGE("no terminating NUL within 4096 bytes");
    EXPECT(weft_stream_reader_open(name, &r), WEFT_ERROR_INVALID_NAME);
    CHECK(w == NULL && r == NULL);
    CHECK(munmap(base, 2 * (size_t)page) == 0);
}

struct late_writer {
    char name[160];
    weft_stream_writer_t *w;
};

static void *create_later(void *arg) {
    struct late_writer *l = arg;
    sleep_ms(100);
    OK(weft_stream_writer_create(l->name, 4096, NULL, &l->w));
    return NULL;
}

/* open_timeout waits for a stream that appears while it waits. */
static void open_timeout_waits_for_the_stream(void) {
    struct late_writer l = {{0}, NULL};
    unique_name(l.name, sizeof l.name, "late");
    pthread_t t;
    CHECK(pthread_create(&t, NULL, create_later, &l) == 0);
    weft_stream_reader_t *r = NULL;
    OK(weft_stream_reader_open_timeout(l.name, 5000, &r));
    CHECK(r != NULL);
    CHECK(pthread_join(t, NULL) == 0);
    OK(weft_stream_writer_write(l.w, (const uint8_t *)"hi", 2));
    const uint8_t *data = NULL;
    size_t len = 0;
    OK(weft_stream_reader_read_timeout(r, 1000, &data, &len));
    CHECK(len == 2 && memcmp(data, "hi", 2) == 0);
    OK(weft_stream_reader_release(r));
    OK(weft_stream_reader_close(&r));
    OK(weft_stream_writer_close(&l.w));
}

int main(void) {
    RUN(byte_exact_across_the_wrap);
    RUN(blocking_between_threads);
    RUN(aligned_records);
    RUN(empty_records_and_null_data);
    RUN(deferred_records);
    RUN(full_empty_timeout_too_large);
    RUN(grant_state_rules);
    RUN(null_pointers);
    RUN(names_and_objects);
    RUN(hot_window);
    RUN(lengths_past_ptrdiff_max_are_too_large);
    RUN(names_are_scanned_for_at_most_4096_bytes);
    RUN(open_timeout_waits_for_the_stream);
    done("stream");
    return 0;
}
