/* Status codes and the thread-local last error, from C. */
#include "check.h"

#include <pthread.h>

/* Every code has its own static text; a number that is no code says so. */
static void every_code_has_a_string(void) {
    const weft_status codes[] = {
        WEFT_OK,
        WEFT_ERROR_INVALID_NAME,
        WEFT_ERROR_INVALID_ARGUMENT,
        WEFT_ERROR_NOT_FOUND,
        WEFT_ERROR_ALREADY_EXISTS,
        WEFT_ERROR_IN_USE,
        WEFT_ERROR_NOT_WEFT,
        WEFT_ERROR_VERSION_MISMATCH,
        WEFT_ERROR_WRONG_KIND,
        WEFT_ERROR_TRUNCATED,
        WEFT_ERROR_NOT_READY,
        WEFT_ERROR_CORRUPT,
        WEFT_ERROR_TOO_LARGE,
        WEFT_ERROR_TIMEOUT,
        WEFT_ERROR_FULL,
        WEFT_ERROR_EMPTY,
        WEFT_ERROR_CLOSED,
        WEFT_ERROR_PEER_DEAD,
        WEFT_ERROR_LAGGED,
        WEFT_ERROR_TYPE_MISMATCH,
        WEFT_ERROR_IO,
        WEFT_ERROR_PANIC,
        WEFT_ERROR_STATE,
        WEFT_ERROR_POISONED,
    };
    const size_t n = sizeof codes / sizeof codes[0];
    /* The codes of weft's ErrorKind are 1 to 20 in order. */
    for (size_t i = 0; i <= 20; i++) CHECK(codes[i] == (weft_status)i);
    const char *unknown = weft_error_string(12345);
    CHECK(unknown != NULL && strcmp(unknown, "unknown status code") == 0);
    CHECK(strcmp(weft_error_string(-1), unknown) == 0);
    CHECK(strcmp(weft_error_string(21), unknown) == 0);
    for (size_t i = 0; i < n; i++) {
        const char *s = weft_error_string(codes[i]);
        CHECK(s != NULL && s[0] != 0);
        CHECK(strcmp(s, unknown) != 0);
        for (size_t j = 0; j < i; j++) CHECK(strcmp(s, weft_error_string(codes[j])) != 0);
        CHECK(s == weft_error_string(codes[i])); /* static: the same pointer every time */
    }
    CHECK(strcmp(weft_error_string(WEFT_ERROR_TIMEOUT), "timed out") == 0);
}

static void *fresh_thread(void *arg) {
    (void)arg;
    /* Another thread has its own last error: nothing failed here yet. */
    CHECK(weft_last_error_code() == WEFT_OK);
    CHECK(strcmp(weft_last_error_message(), "") == 0);
    weft_stream_reader_t *r = NULL;
    EXPECT(weft_stream_reader_open("no-such-stream-from-thread", &r), WEFT_ERROR_NOT_FOUND);
    CHECK(weft_last_error_code() == WEFT_ERROR_NOT_FOUND);
    return NULL;
}

/* The last error is per thread, names what failed, survives successful calls, and stays
 * valid until the next failure on its thread. */
static void last_error_is_per_thread(void) {
    CHECK(weft_last_error_code() == WEFT_OK);
    CHECK(strcmp(weft_last_error_message(), "") == 0);
    CHECK(weft_last_error_skipped() == 0);

    char name[160];
    unique_name(name, sizeof name, "missing");
    weft_stream_reader_t *r = NULL;
    EXPECT(weft_stream_reader_open(name, &r), WEFT_ERROR_NOT_FOUND);
    CHECK(r == NULL);
    const char *msg = weft_last_error_message();
    CHECK(strstr(msg, name) != NULL);
    CHECK(weft_last_error_code() == WEFT_ERROR_NOT_FOUND);

    /* A successful call leaves the message, and the pointer, as they were. */
    weft_name_list_t *list = NULL;
    OK(weft_pubsub_regions(&list));
    OK(weft_name_list_free(&list));
    CHECK(weft_last_error_message() == msg);
    CHECK(strstr(msg, name) != NULL);

    pthread_t t;
    CHECK(pthread_create(&t, NULL, fresh_thread, NULL) == 0);
    CHECK(pthread_join(t, NULL) == 0);
    /* The other thread's failure did not touch this thread's error. */
    CHECK(weft_last_error_code() == WEFT_ERROR_NOT_FOUND);
    CHECK(strstr(weft_last_error_message(), name) != NULL);

    EXPECT(weft_stream_reader_open(NULL, &r), WEFT_ERROR_INVALID_ARGUMENT);
    CHECK(weft_last_error_code() == WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT_MESSAGE("`name` is NULL");
}

int main(void) {
    RUN(every_code_has_a_string);
    RUN(last_error_is_per_thread);
    done("errors");
    return 0;
}
