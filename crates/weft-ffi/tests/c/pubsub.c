/* Pub/sub from C: publishers with a configuration, topics of every mode, loans written in
 * place, the copying publish, subscriptions (now, with history, waiting), samples and
 * borrowed receives, lag counted exactly, the listings, and every error reachable from C. */
#include "check.h"

#include <pthread.h>
#include <stdbool.h>

static weft_pubsub_config small_config(void) {
    weft_pubsub_config c = {0};
    c.blocks = 64;
    c.block_size = 256;
    c.ring_slots = 8;
    c.topics = 8;
    return c;
}

/* Reads the next sample of `sub` (waiting up to a second) and checks its bytes. */
static void expect_sample(weft_subscription_t *sub, const void *bytes, size_t len, uint64_t seq) {
    weft_sample_t *s = NULL;
    OK(weft_subscription_recv_timeout(sub, 1000, &s));
    const uint8_t *data = NULL;
    size_t got = 0;
    uint64_t got_seq = 99;
    OK(weft_sample_data(s, &data, &got));
    OK(weft_sample_seq(s, &got_seq));
    CHECK(got == len);
    CHECK(len == 0 || memcmp(data, bytes, len) == 0);
    CHECK(got_seq == seq);
    OK(weft_sample_release(&s));
    CHECK(s == NULL);
}

/* Borrows the next message of `sub` (it must be there), checks its bytes and releases it. */
static void expect_borrowed(weft_subscription_t *sub, const void *bytes, size_t len, uint64_t seq) {
    const uint8_t *data = NULL;
    size_t got = 0;
    uint64_t got_seq = 99;
    OK(weft_subscription_try_recv_borrowed(sub, &data, &got, &got_seq));
    CHECK(got == len && memcmp(data, bytes, len) == 0 && got_seq == seq);
    OK(weft_subscription_release(sub));
}

/* Loans written in place and the copying publish arrive byte-exact, in order, with their
 * sequence numbers; nothing more is there afterwards. */
static void loan_and_publish_byte_exact(void) {
    char region[160];
    unique_name(region, sizeof region, "exact");
    weft_pubsub_config cfg = small_config();
    weft_publisher_t *p = NULL;
    OK(weft_publisher_create(region, &cfg, &p));
    size_t max = 0;
    OK(weft_publisher_max_len(p, &max));
    CHECK(max == 256);
    weft_topic_t *t = NULL;
    OK(weft_publisher_register(p, "/prices/AAPL", &t));
    const char *tname = NULL;
    OK(weft_topic_name(t, &tname));
    CHECK(strcmp(tname, "/prices/AAPL") == 0);

    weft_subscriber_t *sub = NULL;
    OK(weft_subscriber_connect(region, NULL, &sub));
    weft_subscription_t *s = NULL;
    OK(weft_subscriber_subscribe(sub, "/prices/AAPL", &s));
    weft_sample_t *sample = NULL;
    EXPECT(weft_subscription_try_recv(s, &sample), WEFT_ERROR_EMPTY);
    EXPECT(weft_subscription_recv_timeout(s, 20, &sample), WEFT_ERROR_TIMEOUT);
    CHECK(sample == NULL);

    for (uint64_t i = 0; i < 500; i++) {
        size_t len = length_of(i, 256);
        uint64_t seq = 12345;
        if (i % 2 == 0) {
            weft_loan_t *loan = NULL;
            uint8_t *data = NULL;
            size_t cap = 0;
            OK(weft_publisher_loan(p, t, &loan, &data, &cap));
            CHECK(cap == 256);
            CHECK(((uintptr_t)data % 64) == 0);
            fill(data, len, i);
            OK(weft_loan_set_len(loan, len));
            OK(weft_loan_publish(&loan, &seq));
            CHECK(loan == NULL);
        } else {
            uint8_t buf[256];
            fill(buf, len, i);
            OK(weft_publisher_publish(p, t, buf, len, &seq));
        }
        CHECK(seq == i);
        weft_sample_t *got = NULL;
        if (i % 3 == 0) {
            OK(weft_subscription_try_recv(s, &got));
        } else if (i % 3 == 1) {
            OK(weft_subscription_recv(s, &got));
        } else {
            OK(weft_subscription_recv_timeout(s, 1000, &got));
        }
        const uint8_t *data = NULL;
        size_t n = 0;
        uint64_t got_seq = 0;
        OK(weft_sample_data(got, &data, &n));
        OK(weft_sample_seq(got, &got_seq));
        CHECK(n == len && matches(data, n, i) && got_seq == i);
        OK(weft_sample_release(&got));
    }
    EXPECT(weft_subscription_try_recv(s, &sample), WEFT_ERROR_EMPTY);
    /* A NULL seq is allowed: the caller does not want it. */
    OK(weft_publisher_publish(p, t, (const uint8_t *)"x", 1, NULL));
    expect_sample(s, "x", 1, 500);
    OK(weft_publisher_publish(p, t, NULL, 0, NULL)); /* an empty message */
    expect_sample(s, "", 0, 501);

    OK(weft_subscription_close(&s));
    OK(weft_subscriber_close(&sub));
    OK(weft_topic_free(&t));
    OK(weft_publisher_close(&p));
}

/* A sample outlives its subscription and subscriber; a loan outlives its publisher handle. */
static void handles_outlive_their_makers(void) {
    char region[160];
    unique_name(region, sizeof region, "outlive");
    weft_pubsub_config cfg = small_config();
    weft_publisher_t *p = NULL;
    OK(weft_publisher_create(region, &cfg, &p));
    weft_topic_t *t = NULL;
    OK(weft_publisher_register(p, "/t", &t));
    weft_subscriber_t *sub = NULL;
    OK(weft_subscriber_connect(region, &cfg, &sub));
    weft_subscription_t *s = NULL;
    OK(weft_subscriber_subscribe(sub, "/t", &s));

    weft_loan_t *loans[3] = {NULL, NULL, NULL};
    uint8_t *data[3];
    size_t cap = 0;
    for (int i = 0; i < 3; i++) OK(weft_publisher_loan(p, t, &loans[i], &data[i], &cap));
    OK(weft_publisher_close(&p)); /* the loans keep the publisher alive */
    CHECK(p == NULL);
    for (int i = 0; i < 3; i++) {
        fill(data[i], 200, 40 + i);
        OK(weft_loan_set_len(loans[i], 200));
    }
    OK(weft_loan_publish(&loans[0], NULL));
    OK(weft_loan_release(&loans[1])); /* given back unpublished */
    OK(weft_loan_publish(&loans[2], NULL));

    weft_sample_t *a = NULL, *b = NULL;
    OK(weft_subscription_try_recv(s, &a));
    OK(weft_subscription_try_recv(s, &b));
    weft_sample_t *none = NULL;
    EXPECT(weft_subscription_try_recv(s, &none), WEFT_ERROR_EMPTY);
    OK(weft_subscription_close(&s));
    OK(weft_subscriber_close(&sub));
    OK(weft_topic_free(&t));
    const uint8_t *bytes = NULL;
    size_t len = 0;
    OK(weft_sample_data(a, &bytes, &len));
    CHECK(len == 200 && matches(bytes, len, 40));
    OK(weft_sample_data(b, &bytes, &len));
    CHECK(len == 200 && matches(bytes, len, 42));
    OK(weft_sample_release(&a));
    OK(weft_sample_release(&b));
}

/* Latest topics give the newest value; history gives a late joiner the last messages. */
static void latest_and_history(void) {
    char region[160];
    unique_name(region, sizeof region, "modes");
    weft_pubsub_config cfg = small_config();
    weft_publisher_t *p = NULL;
    OK(weft_publisher_create(region, &cfg, &p));
    weft_topic_t *latest = NULL, *log = NULL, *again = NULL;
    OK(weft_publisher_register_with(p, "/latest", WEFT_TOPIC_LATEST, &latest));
    OK(weft_publisher_register_with(p, "/latest", WEFT_TOPIC_LATEST, &again)); /* found */
    EXPECT(weft_publisher_register_with(p, "/latest", WEFT_TOPIC_BLOCKS, &again),
           WEFT_ERROR_INVALID_ARGUMENT); /* registered with another mode */
    OK(weft_topic_free(&again));
    OK(weft_publisher_register(p, "/log", &log));

    weft_subscriber_t *sub = NULL;
    OK(weft_subscriber_connect(region, NULL, &sub));
    weft_subscription_t *ls = NULL;
    OK(weft_subscriber_subscribe(sub, "/latest", &ls));
    const char *values[] = {"100.1", "100.2", "100.3"};
    for (int i = 0; i < 3; i++) {
        OK(weft_publisher_publish(p, latest, (const uint8_t *)values[i], 5, NULL));
        OK(weft_publisher_publish(p, log, (const uint8_t *)values[i], 5, NULL));
    }
    expect_sample(ls, "100.3", 5, 2);
    weft_sample_t *none = NULL;
    EXPECT(weft_subscription_try_recv(ls, &none), WEFT_ERROR_EMPTY);

    weft_subscription_t *late = NULL, *all = NULL;
    OK(weft_subscriber_subscribe_with_history(sub, "/log", SIZE_MAX, &all)); /* all there is */
    expect_sample(all, "100.1", 5, 0);
    OK(weft_subscription_close(&all));
    OK(weft_subscriber_subscribe_with_history(sub, "/log", 2, &late));
    expect_sample(late, "100.2", 5, 1);
    expect_sample(late, "100.3", 5, 2);
    EXPECT(weft_subscription_try_recv(late, &none), WEFT_ERROR_EMPTY);

    /* Inline topics: registered with their message size, exactly that many bytes each. */
    weft_topic_t *inl = NULL, *inl_again = NULL;
    EXPECT(weft_publisher_register_with(p, "/inline", WEFT_TOPIC_INLINE, &inl),
           WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT_MESSAGE("weft_publisher_register_inline");
    CHECK(inl == NULL);
    EXPECT(weft_publisher_register_inline(p, "/inline", 0, &inl), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_publisher_register_inline(p, "/inline", 57, &inl), WEFT_ERROR_INVALID_ARGUMENT);
    OK(weft_publisher_register_inline(p, "/inline", 8, &inl));
    OK(weft_publisher_register_inline(p, "/inline", 8, &inl_again)); /* found */
    OK(weft_topic_free(&inl_again));
    EXPECT(weft_publisher_register_inline(p, "/inline", 16, &inl_again),
           WEFT_ERROR_INVALID_ARGUMENT); /* registered with another size */
    EXPECT(weft_publisher_register_inline(p, "/log", 8, &inl_again),
           WEFT_ERROR_INVALID_ARGUMENT); /* registered with another mode */
    weft_subscription_t *is = NULL;
    OK(weft_subscriber_subscribe(sub, "/inline", &is));
    EXPECT(weft_publisher_publish(p, inl, (const uint8_t *)"1234", 4, NULL),
           WEFT_ERROR_INVALID_ARGUMENT); /* not the topic's size */
    OK(weft_publisher_publish(p, inl, (const uint8_t *)"12345678", 8, NULL));
    OK(weft_publisher_publish(p, inl, (const uint8_t *)"abcdefgh", 8, NULL));
    expect_sample(is, "12345678", 8, 0);
    expect_sample(is, "abcdefgh", 8, 1);
    OK(weft_subscription_close(&is));
    EXPECT(weft_publisher_register_inline_latest(p, "/inline", 8, &inl_again),
           WEFT_ERROR_INVALID_ARGUMENT); /* registered as an inline topic of every value */
    OK(weft_topic_free(&inl));
    /* A latest-value inline topic: a receive gets the newest message only. */
    OK(weft_publisher_register_inline_latest(p, "/price", 8, &inl));
    OK(weft_subscriber_subscribe(sub, "/price", &is));
    OK(weft_publisher_publish(p, inl, (const uint8_t *)"price-01", 8, NULL));
    OK(weft_publisher_publish(p, inl, (const uint8_t *)"price-02", 8, NULL));
    OK(weft_publisher_publish(p, inl, (const uint8_t *)"price-03", 8, NULL));
    expect_sample(is, "price-03", 8, 2);
    weft_sample_t *newer = NULL;
    EXPECT(weft_subscription_try_recv(is, &newer), WEFT_ERROR_EMPTY);
    OK(weft_subscription_close(&is));
    OK(weft_topic_free(&inl));
    /* Latest values may be larger than a line: up to 16 * ring_slots - 8 = 120 bytes here. */
    EXPECT(weft_publisher_register_inline_latest(p, "/wide", 121, &inl),
           WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_publisher_register_inline(p, "/wide", 120, &inl), WEFT_ERROR_INVALID_ARGUMENT);
    OK(weft_publisher_register_inline_latest(p, "/wide", 120, &inl));
    OK(weft_subscriber_subscribe(sub, "/wide", &is));
    uint8_t wide[120];
    for (int k = 1; k <= 3; k++) {
        memset(wide, k, sizeof wide);
        OK(weft_publisher_publish(p, inl, wide, sizeof wide, NULL));
    }
    expect_sample(is, wide, sizeof wide, 2);
    memset(wide, 9, sizeof wide);
    OK(weft_publisher_publish(p, inl, wide, sizeof wide, NULL));
    expect_borrowed(is, wide, sizeof wide, 3);
    OK(weft_subscription_close(&is));
    OK(weft_topic_free(&inl));
    EXPECT(weft_publisher_register_with(p, "/m", 3, &inl), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT_MESSAGE("topic mode 3");
    EXPECT(weft_publisher_register_with(p, "/m", -1, &inl), WEFT_ERROR_INVALID_ARGUMENT);

    OK(weft_subscription_close(&ls));
    OK(weft_subscription_close(&late));
    OK(weft_subscriber_close(&sub));
    OK(weft_topic_free(&latest));
    OK(weft_topic_free(&log));
    OK(weft_publisher_close(&p));
}

/* A subscriber that falls behind learns exactly how many messages it missed. */
static void lag_is_counted_exactly(void) {
    char region[160];
    unique_name(region, sizeof region, "lag");
    weft_pubsub_config cfg = small_config();
    weft_publisher_t *p = NULL;
    OK(weft_publisher_create(region, &cfg, &p));
    weft_topic_t *t = NULL;
    OK(weft_publisher_register(p, "/ticks", &t));
    weft_subscriber_t *sub = NULL;
    OK(weft_subscriber_connect(region, NULL, &sub));
    weft_subscription_t *s = NULL;
    OK(weft_subscriber_subscribe(sub, "/ticks", &s));
    const uint64_t published = 50; /* the ring holds 8 */
    for (uint64_t i = 0; i < published; i++) {
        uint8_t buf[16];
        fill(buf, sizeof buf, i);
        OK(weft_publisher_publish(p, t, buf, sizeof buf, NULL));
    }
    uint64_t received = 0, skipped = 0, lags = 0, expected_seq = 0;
    for (;;) {
        weft_sample_t *sample = NULL;
        weft_status rc = weft_subscription_try_recv(s, &sample);
        if (rc == WEFT_ERROR_EMPTY) break;
        if (rc == WEFT_ERROR_LAGGED) {
            CHECK(weft_last_error_code() == WEFT_ERROR_LAGGED);
            CHECK(weft_last_error_skipped() > 0);
            skipped += weft_last_error_skipped();
            expected_seq += weft_last_error_skipped();
            EXPECT_MESSAGE("overwritten");
            lags++;
            continue;
        }
        OK(rc);
        const uint8_t *data = NULL;
        size_t len = 0;
        uint64_t seq = 0;
        OK(weft_sample_data(sample, &data, &len));
        OK(weft_sample_seq(sample, &seq));
        CHECK(seq == expected_seq);
        CHECK(len == 16 && matches(data, len, seq));
        OK(weft_sample_release(&sample));
        received++;
        expected_seq++;
    }
    CHECK(lags >= 1);
    CHECK(received <= 8);
    CHECK(received + skipped == published);
    OK(weft_subscription_close(&s));
    OK(weft_subscriber_close(&sub));
    OK(weft_topic_free(&t));
    OK(weft_publisher_close(&p));
}

struct later {
    weft_publisher_t *p;
    weft_topic_t *t;
};

static void *publish_later(void *arg) {
    struct later *l = arg;
    sleep_ms(50);
    OK(weft_publisher_publish(l->p, l->t, (const uint8_t *)"late", 4, NULL));
    return NULL;
}

static void *register_later(void *arg) {
    struct later *l = arg;
    sleep_ms(50);
    OK(weft_publisher_register(l->p, "/appears", &l->t));
    return NULL;
}

/* A receive and a subscription that wait for another thread (the publisher moves to it and
 * back; the subscriber is shared). */
static void waiting_for_another_thread(void) {
    char region[160];
    unique_name(region, sizeof region, "wait");
    weft_pubsub_config cfg = small_config();
    cfg.wait = WEFT_WAIT_PARK;
    weft_publisher_t *p = NULL;
    OK(weft_publisher_create(region, &cfg, &p));
    weft_subscriber_t *sub = NULL;
    OK(weft_subscriber_connect_timeout(region, 1000, &sub));

    struct later l = {p, NULL};
    pthread_t th;
    CHECK(pthread_create(&th, NULL, register_later, &l) == 0);
    weft_subscription_t *s = NULL;
    OK(weft_subscriber_subscribe_timeout(sub, "/appears", 5000, &s));
    CHECK(pthread_join(th, NULL) == 0);

    CHECK(pthread_create(&th, NULL, publish_later, &l) == 0);
    weft_sample_t *sample = NULL;
    OK(weft_subscription_recv_timeout(s, 5000, &sample));
    CHECK(pthread_join(th, NULL) == 0);
    const uint8_t *data = NULL;
    size_t len = 0;
    OK(weft_sample_data(sample, &data, &len));
    CHECK(len == 4 && memcmp(data, "late", 4) == 0);
    OK(weft_sample_release(&sample));

    weft_subscription_t *none = NULL;
    EXPECT(weft_subscriber_subscribe_timeout(sub, "/never", 20, &none), WEFT_ERROR_NOT_FOUND);
    CHECK(none == NULL);
    OK(weft_subscription_close(&s));
    OK(weft_subscriber_close(&sub));
    OK(weft_topic_free(&l.t));
    OK(weft_publisher_close(&p));
}

/* The pool runs dry (FULL) and refills; a loan is never longer than a block. */
static void pool_limits(void) {
    char region[160];
    unique_name(region, sizeof region, "pool");
    weft_pubsub_config cfg = {0};
    cfg.blocks = 4;
    cfg.ring_slots = 2;
    cfg.block_size = 128;
    weft_publisher_t *p = NULL;
    OK(weft_publisher_create(region, &cfg, &p));
    weft_topic_t *t = NULL;
    OK(weft_publisher_register(p, "/t", &t));
    weft_loan_t *loans[4];
    uint8_t *data = NULL;
    size_t cap = 0;
    for (int i = 0; i < 4; i++) OK(weft_publisher_loan(p, t, &loans[i], &data, &cap));
    weft_loan_t *extra = NULL;
    EXPECT(weft_publisher_loan(p, t, &extra, &data, &cap), WEFT_ERROR_FULL);
    CHECK(extra == NULL);
    EXPECT(weft_publisher_publish(p, t, (const uint8_t *)"x", 1, NULL), WEFT_ERROR_FULL);
    EXPECT(weft_loan_set_len(loans[0], 129), WEFT_ERROR_TOO_LARGE);
    EXPECT(weft_loan_set_len(loans[0], SIZE_MAX), WEFT_ERROR_TOO_LARGE);
    OK(weft_loan_set_len(loans[0], 128));
    for (int i = 0; i < 4; i++) OK(weft_loan_release(&loans[i]));
    EXPECT(weft_loan_release(&loans[0]), WEFT_ERROR_STATE);   /* released twice */
    EXPECT(weft_loan_publish(&loans[1], NULL), WEFT_ERROR_STATE); /* released already */
    OK(weft_publisher_loan(p, t, &extra, &data, &cap));
    OK(weft_loan_release(&extra));
    static uint8_t big[129];
    EXPECT(weft_publisher_publish(p, t, big, sizeof big, NULL), WEFT_ERROR_TOO_LARGE);
    OK(weft_topic_free(&t));
    EXPECT(weft_topic_free(&t), WEFT_ERROR_STATE);
    OK(weft_publisher_close(&p));
    EXPECT(weft_publisher_close(&p), WEFT_ERROR_STATE);
}

/* max_held counts a participant's samples, loans and subscriptions together, and a
 * subscription that has made a borrowed receive keeps one more entry reserved for it. */
static void held_limit(void) {
    char region[160];
    unique_name(region, sizeof region, "held");
    weft_pubsub_config cfg = small_config();
    cfg.max_held = 2;
    weft_publisher_t *p = NULL;
    OK(weft_publisher_create(region, &cfg, &p));
    weft_topic_t *t = NULL;
    OK(weft_publisher_register(p, "/h", &t));
    weft_subscriber_t *sub = NULL;
    OK(weft_subscriber_connect(region, NULL, &sub));
    weft_subscription_t *s = NULL, *more = NULL;
    OK(weft_subscriber_subscribe(sub, "/h", &s)); /* one entry */
    for (int i = 0; i < 4; i++) OK(weft_publisher_publish(p, t, (const uint8_t *)"m", 1, NULL));
    weft_sample_t *first = NULL, *second = NULL;
    OK(weft_subscription_try_recv(s, &first)); /* two */
    EXPECT(weft_subscription_try_recv(s, &second), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT_MESSAGE("held at once");
    CHECK(second == NULL);
    EXPECT(weft_subscriber_subscribe(sub, "/h", &more), WEFT_ERROR_INVALID_ARGUMENT);
    CHECK(more == NULL);
    OK(weft_sample_release(&first));
    OK(weft_subscriber_subscribe(sub, "/h", &more)); /* two subscriptions fit */
    OK(weft_subscription_close(&more));
    /* A borrowed receive reserves an entry, kept after its release: with the subscription's
       own, that is two. The next receive uses it. */
    const uint8_t *data = NULL;
    size_t len = 0;
    OK(weft_subscription_try_recv_borrowed(s, &data, &len, NULL));
    OK(weft_subscription_release(s));
    EXPECT(weft_subscriber_subscribe(sub, "/h", &more), WEFT_ERROR_INVALID_ARGUMENT);
    OK(weft_subscription_try_recv(s, &second));
    EXPECT(weft_subscriber_subscribe(sub, "/h", &more), WEFT_ERROR_INVALID_ARGUMENT);
    OK(weft_sample_release(&second));
    OK(weft_subscriber_subscribe(sub, "/h", &more));
    OK(weft_subscription_close(&more));
    OK(weft_subscription_close(&s));
    OK(weft_subscriber_close(&sub));
    OK(weft_topic_free(&t));
    OK(weft_publisher_close(&p));
}

/* Latest values of 128 bytes and more (copied in bulk): whole and byte-exact through the copying
 * and the borrowed receive, never an older one. */
static void large_latest_values(void) {
    char region[160];
    unique_name(region, sizeof region, "wide");
    weft_pubsub_config cfg = {0};
    cfg.ring_slots = 16; /* latest values up to 16 * 16 - 8 = 248 bytes */
    weft_publisher_t *p = NULL;
    OK(weft_publisher_create(region, &cfg, &p));
    weft_topic_t *t = NULL;
    EXPECT(weft_publisher_register_inline_latest(p, "/frame", 249, &t),
           WEFT_ERROR_INVALID_ARGUMENT);
    OK(weft_publisher_register_inline_latest(p, "/frame", 248, &t));
    weft_subscriber_t *sub = NULL;
    OK(weft_subscriber_connect(region, NULL, &sub));
    weft_subscription_t *s = NULL;
    OK(weft_subscriber_subscribe(sub, "/frame", &s));
    uint8_t frame[248];
    for (int k = 1; k <= 5; k++) {
        for (size_t i = 0; i < sizeof frame; i++) frame[i] = (uint8_t)(k * 31 + i);
        OK(weft_publisher_publish(p, t, frame, sizeof frame, NULL));
    }
    expect_sample(s, frame, sizeof frame, 4);
    weft_sample_t *none = NULL;
    EXPECT(weft_subscription_try_recv(s, &none), WEFT_ERROR_EMPTY);
    for (size_t i = 0; i < sizeof frame; i++) frame[i] = (uint8_t)(255 - i);
    OK(weft_publisher_publish(p, t, frame, sizeof frame, NULL));
    expect_borrowed(s, frame, sizeof frame, 5);
    const uint8_t *data = NULL;
    size_t len = 0;
    uint64_t seq = 0;
    EXPECT(weft_subscription_try_recv_borrowed(s, &data, &len, &seq), WEFT_ERROR_EMPTY);
    OK(weft_subscription_close(&s));
    OK(weft_subscriber_close(&sub));
    OK(weft_topic_free(&t));
    OK(weft_publisher_close(&p));
}

static bool list_has(weft_name_list_t *list, const char *want) {
    size_t n = 0;
    OK(weft_name_list_len(list, &n));
    for (size_t i = 0; i < n; i++) {
        const char *name = NULL;
        OK(weft_name_list_get(list, i, &name));
        if (strcmp(name, want) == 0) return true;
    }
    return false;
}

/* The region and topic listings. */
static void listings(void) {
    char region[160];
    unique_name(region, sizeof region, "listed");
    weft_publisher_t *p = NULL;
    OK(weft_publisher_create(region, NULL, &p));
    weft_topic_t *a = NULL, *b = NULL;
    OK(weft_publisher_register(p, "/a", &a));
    OK(weft_publisher_register(p, "/b/c", &b));

    weft_name_list_t *list = NULL;
    OK(weft_pubsub_regions(&list));
    CHECK(list_has(list, region));
    size_t n = 0;
    OK(weft_name_list_len(list, &n));
    const char *name = NULL;
    EXPECT(weft_name_list_get(list, n, &name), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT_MESSAGE("past the end");
    OK(weft_name_list_free(&list));
    EXPECT(weft_name_list_free(&list), WEFT_ERROR_STATE);

    OK(weft_pubsub_topics(region, &list));
    OK(weft_name_list_len(list, &n));
    CHECK(n == 2 && list_has(list, "/a") && list_has(list, "/b/c"));
    OK(weft_name_list_free(&list));

    char missing[160];
    unique_name(missing, sizeof missing, "unlisted");
    EXPECT(weft_pubsub_topics(missing, &list), WEFT_ERROR_NOT_FOUND);
    EXPECT(weft_pubsub_topics("bad/name", &list), WEFT_ERROR_INVALID_NAME);
    CHECK(list == NULL);
    OK(weft_topic_free(&a));
    OK(weft_topic_free(&b));
    OK(weft_publisher_close(&p));

    /* The last participant out removes the region. */
    OK(weft_pubsub_regions(&list));
    CHECK(!list_has(list, region));
    OK(weft_name_list_free(&list));
}

/* Names, missing regions and topics, configurations out of range. */
static void names_and_objects(void) {
    char region[160];
    unique_name(region, sizeof region, "objects");
    weft_publisher_t *p = NULL;
    weft_subscriber_t *sub = NULL;
    EXPECT(weft_publisher_open(region, NULL, &p), WEFT_ERROR_NOT_FOUND);
    EXPECT(weft_subscriber_connect(region, NULL, &sub), WEFT_ERROR_NOT_FOUND);
    EXPECT(weft_subscriber_connect_timeout(region, 20, &sub), WEFT_ERROR_NOT_FOUND);
    EXPECT(weft_publisher_create("a/b", NULL, &p), WEFT_ERROR_INVALID_NAME);
    EXPECT(weft_publisher_create("\xc0\x80", NULL, &p), WEFT_ERROR_INVALID_NAME);
    EXPECT(weft_subscriber_connect("", NULL, &sub), WEFT_ERROR_INVALID_NAME);
    weft_pubsub_config cfg = {0};
    cfg.ring_slots = 3; /* not a power of two */
    EXPECT(weft_publisher_create(region, &cfg, &p), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT_MESSAGE("ring");
    cfg.ring_slots = 0;
    cfg.block_size = 100; /* not a multiple of 64 */
    EXPECT(weft_publisher_create(region, &cfg, &p), WEFT_ERROR_INVALID_ARGUMENT);
    cfg.block_size = 0;
    cfg.blocks = SIZE_MAX;
    EXPECT(weft_publisher_create(region, &cfg, &p), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT_MESSAGE("blocks");
    cfg.blocks = 0;
    cfg.participants = SIZE_MAX;
    EXPECT(weft_publisher_create(region, &cfg, &p), WEFT_ERROR_INVALID_ARGUMENT);
    cfg.participants = 0;
    cfg.wait = 42;
    EXPECT(weft_publisher_create(region, &cfg, &p), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_publisher_open(region, &cfg, &p), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_subscriber_connect(region, &cfg, &sub), WEFT_ERROR_INVALID_ARGUMENT);
    CHECK(p == NULL && sub == NULL);

    OK(weft_publisher_create(region, NULL, &p));
    weft_publisher_t *other = NULL;
    EXPECT(weft_publisher_create(region, NULL, &other), WEFT_ERROR_ALREADY_EXISTS);
    OK(weft_publisher_open(region, NULL, &other)); /* a second publisher joins */
    weft_topic_t *t = NULL, *t2 = NULL;
    OK(weft_publisher_register(p, "/shared", &t));
    OK(weft_publisher_register(other, "/shared", &t2));
    EXPECT(weft_publisher_register(p, "no-slash", &t2), WEFT_ERROR_INVALID_NAME);
    EXPECT(weft_publisher_register(p, "/a//b", &t2), WEFT_ERROR_INVALID_NAME);

    OK(weft_subscriber_connect(region, NULL, &sub));
    weft_subscription_t *s = NULL;
    EXPECT(weft_subscriber_subscribe(sub, "/absent", &s), WEFT_ERROR_NOT_FOUND);
    EXPECT(weft_subscriber_subscribe(sub, "bad", &s), WEFT_ERROR_INVALID_NAME);
    EXPECT(weft_subscriber_subscribe_with_history(sub, "/absent", 4, &s), WEFT_ERROR_NOT_FOUND);
    OK(weft_subscriber_subscribe(sub, "/shared", &s));
    OK(weft_publisher_publish(other, t2, (const uint8_t *)"one", 3, NULL));
    OK(weft_publisher_publish(p, t, (const uint8_t *)"two", 3, NULL));
    expect_sample(s, "one", 3, 0);
    expect_sample(s, "two", 3, 1);

    /* A stream is not a region. */
    char stream[160];
    unique_name(stream, sizeof stream, "notaregion");
    weft_stream_writer_t *w = NULL;
    OK(weft_stream_writer_create(stream, 4096, NULL, &w));
    weft_subscriber_t *wrong = NULL;
    EXPECT(weft_subscriber_connect(stream, NULL, &wrong), WEFT_ERROR_WRONG_KIND);
    OK(weft_stream_writer_close(&w));

    OK(weft_subscription_close(&s));
    EXPECT(weft_subscription_close(&s), WEFT_ERROR_STATE);
    OK(weft_subscriber_close(&sub));
    EXPECT(weft_subscriber_close(&sub), WEFT_ERROR_STATE);
    OK(weft_topic_free(&t));
    OK(weft_topic_free(&t2));
    OK(weft_publisher_close(&other));
    OK(weft_publisher_close(&p));
}

/* Every pointer argument is checked. */
static void null_pointers(void) {
    char region[160];
    unique_name(region, sizeof region, "nulls");
    weft_publisher_t *p = NULL;
    weft_subscriber_t *sub = NULL;
    EXPECT(weft_publisher_create(NULL, NULL, &p), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_publisher_create(region, NULL, NULL), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_publisher_open(NULL, NULL, &p), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_publisher_open(region, NULL, NULL), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_subscriber_connect(NULL, NULL, &sub), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_subscriber_connect(region, NULL, NULL), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_subscriber_connect_timeout(NULL, 1, &sub), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_subscriber_connect_timeout(region, 1, NULL), WEFT_ERROR_INVALID_ARGUMENT);
    OK(weft_publisher_create(region, NULL, &p));
    OK(weft_subscriber_connect(region, NULL, &sub));

    weft_topic_t *t = NULL;
    EXPECT(weft_publisher_register(NULL, "/t", &t), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_publisher_register(p, NULL, &t), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_publisher_register(p, "/t", NULL), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_publisher_register_with(NULL, "/t", 0, &t), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_publisher_register_with(p, NULL, 0, &t), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_publisher_register_with(p, "/t", 0, NULL), WEFT_ERROR_INVALID_ARGUMENT);
    OK(weft_publisher_register(p, "/t", &t));
    const char *name = NULL;
    EXPECT(weft_topic_name(NULL, &name), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_topic_name(t, NULL), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_topic_free(NULL), WEFT_ERROR_INVALID_ARGUMENT);
    size_t n = 0;
    EXPECT(weft_publisher_max_len(NULL, &n), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_publisher_max_len(p, NULL), WEFT_ERROR_INVALID_ARGUMENT);

    weft_loan_t *loan = NULL;
    uint8_t *data = NULL;
    size_t cap = 0;
    EXPECT(weft_publisher_loan(NULL, t, &loan, &data, &cap), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_publisher_loan(p, NULL, &loan, &data, &cap), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_publisher_loan(p, t, NULL, &data, &cap), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_publisher_loan(p, t, &loan, NULL, &cap), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_publisher_loan(p, t, &loan, &data, NULL), WEFT_ERROR_INVALID_ARGUMENT);
    OK(weft_publisher_loan(p, t, &loan, &data, &cap));
    EXPECT(weft_loan_set_len(NULL, 1), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_loan_publish(NULL, NULL), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_loan_release(NULL), WEFT_ERROR_INVALID_ARGUMENT);
    OK(weft_loan_release(&loan));
    uint64_t seq = 0;
    EXPECT(weft_publisher_publish(NULL, t, data, 0, &seq), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_publisher_publish(p, NULL, data, 0, &seq), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_publisher_publish(p, t, NULL, 1, &seq), WEFT_ERROR_INVALID_ARGUMENT);

    weft_subscription_t *s = NULL;
    EXPECT(weft_subscriber_subscribe(NULL, "/t", &s), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_subscriber_subscribe(sub, NULL, &s), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_subscriber_subscribe(sub, "/t", NULL), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_subscriber_subscribe_with_history(NULL, "/t", 1, &s), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_subscriber_subscribe_with_history(sub, NULL, 1, &s), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_subscriber_subscribe_with_history(sub, "/t", 1, NULL), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_subscriber_subscribe_timeout(NULL, "/t", 1, &s), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_subscriber_subscribe_timeout(sub, NULL, 1, &s), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_subscriber_subscribe_timeout(sub, "/t", 1, NULL), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_subscriber_close(NULL), WEFT_ERROR_INVALID_ARGUMENT);
    OK(weft_subscriber_subscribe(sub, "/t", &s));
    OK(weft_publisher_publish(p, t, (const uint8_t *)"v", 1, NULL));

    weft_sample_t *sample = NULL;
    EXPECT(weft_subscription_try_recv(NULL, &sample), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_subscription_try_recv(s, NULL), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_subscription_recv(NULL, &sample), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_subscription_recv(s, NULL), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_subscription_recv_timeout(NULL, 1, &sample), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_subscription_recv_timeout(s, 1, NULL), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_subscription_close(NULL), WEFT_ERROR_INVALID_ARGUMENT);
    /* The NULL out-pointers above consumed nothing: the message is still there. */
    OK(weft_subscription_try_recv(s, &sample));
    const uint8_t *bytes = NULL;
    EXPECT(weft_sample_data(NULL, &bytes, &n), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_sample_data(sample, NULL, &n), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_sample_data(sample, &bytes, NULL), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_sample_seq(NULL, &seq), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_sample_seq(sample, NULL), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_sample_release(NULL), WEFT_ERROR_INVALID_ARGUMENT);
    OK(weft_sample_release(&sample));
    EXPECT(weft_sample_release(&sample), WEFT_ERROR_STATE); /* released twice */

    weft_name_list_t *list = NULL;
    EXPECT(weft_pubsub_regions(NULL), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_pubsub_topics(NULL, &list), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_pubsub_topics(region, NULL), WEFT_ERROR_INVALID_ARGUMENT);
    OK(weft_pubsub_topics(region, &list));
    EXPECT(weft_name_list_len(NULL, &n), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_name_list_len(list, NULL), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_name_list_get(NULL, 0, &name), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_name_list_get(list, 0, NULL), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_name_list_free(NULL), WEFT_ERROR_INVALID_ARGUMENT);
    OK(weft_name_list_free(&list));

    EXPECT(weft_publisher_close(NULL), WEFT_ERROR_INVALID_ARGUMENT);
    OK(weft_subscription_close(&s));
    OK(weft_subscriber_close(&sub));
    OK(weft_topic_free(&t));
    OK(weft_publisher_close(&p));
}

/* Borrowed receives: the subscription lends each message in place until it is released;
 * one at a time (any receive meanwhile is a state error, and so is a release with nothing
 * lent); lag and timeouts as for samples; no block is kept once released (a pool of 16
 * blocks carries 200 messages), and closing the subscription releases what it lends. */
static void borrowed_receives(void) {
    char region[160];
    unique_name(region, sizeof region, "borrow");
    weft_pubsub_config cfg = small_config();
    cfg.blocks = 16;
    cfg.ring_slots = 4;
    weft_publisher_t *p = NULL;
    OK(weft_publisher_create(region, &cfg, &p));
    weft_topic_t *t = NULL;
    OK(weft_publisher_register(p, "/b", &t));
    weft_subscriber_t *sub = NULL;
    OK(weft_subscriber_connect(region, NULL, &sub));
    weft_subscription_t *s = NULL;
    OK(weft_subscriber_subscribe(sub, "/b", &s));
    const uint8_t *data = NULL;
    size_t len = 0;
    uint64_t seq = 99;
    EXPECT(weft_subscription_try_recv_borrowed(s, &data, &len, &seq), WEFT_ERROR_EMPTY);
    EXPECT(weft_subscription_recv_borrowed_timeout(s, 10, &data, &len, NULL),
           WEFT_ERROR_TIMEOUT);
    EXPECT(weft_subscription_release(s), WEFT_ERROR_STATE);
    for (uint64_t i = 0; i < 200; i++) {
        uint8_t buf[24];
        fill(buf, sizeof buf, i);
        OK(weft_publisher_publish(p, t, buf, sizeof buf, NULL));
        if (i % 2 == 0) {
            OK(weft_subscription_try_recv_borrowed(s, &data, &len, &seq));
        } else {
            OK(weft_subscription_recv_borrowed(s, &data, &len, NULL));
            seq = i;
        }
        CHECK(seq == i && len == sizeof buf && matches(data, len, i));
        /* One message at a time. */
        weft_sample_t *other = NULL;
        EXPECT(weft_subscription_try_recv(s, &other), WEFT_ERROR_STATE);
        CHECK(other == NULL);
        EXPECT(weft_subscription_try_recv_borrowed(s, &data, &len, NULL), WEFT_ERROR_STATE);
        OK(weft_subscription_release(s));
    }
    EXPECT(weft_subscription_release(s), WEFT_ERROR_STATE);
    /* Lag, then the oldest message still there. */
    for (uint64_t i = 0; i < 10; i++) {
        uint8_t buf[24];
        fill(buf, sizeof buf, 200 + i);
        OK(weft_publisher_publish(p, t, buf, sizeof buf, NULL));
    }
    EXPECT(weft_subscription_try_recv_borrowed(s, &data, &len, &seq), WEFT_ERROR_LAGGED);
    CHECK(weft_last_error_skipped() == 6);
    OK(weft_subscription_try_recv_borrowed(s, &data, &len, &seq));
    CHECK(seq == 206 && matches(data, len, 206));
    /* Closing the subscription while it lends releases the message. */
    OK(weft_subscription_close(&s));
    CHECK(s == NULL);
    OK(weft_subscriber_subscribe(sub, "/b", &s));
    for (uint64_t i = 0; i < 40; i++) {
        uint8_t buf[24];
        fill(buf, sizeof buf, 300 + i);
        OK(weft_publisher_publish(p, t, buf, sizeof buf, NULL));
    }
    OK(weft_subscription_close(&s));
    OK(weft_subscriber_close(&sub));
    OK(weft_topic_free(&t));
    OK(weft_publisher_close(&p));
}

/* A single-publisher topic has one live holder; the setting is part of the registration, the
 * size must fit the mode, and the next registrant takes over once the holder closes. */
static void single_publisher_topics(void) {
    char region[160];
    unique_name(region, sizeof region, "single");
    weft_pubsub_config cfg = small_config();
    weft_publisher_t *p = NULL, *q = NULL;
    OK(weft_publisher_create(region, &cfg, &p));
    OK(weft_publisher_open(region, NULL, &q));
    weft_topic_t *t = NULL, *other = NULL;
    OK(weft_publisher_register_single(p, "/frames", WEFT_TOPIC_BLOCKS, 0, &t));
    EXPECT(weft_publisher_register_single(q, "/frames", WEFT_TOPIC_BLOCKS, 0, &other),
           WEFT_ERROR_IN_USE);
    EXPECT_MESSAGE("/frames");
    CHECK(other == NULL);
    EXPECT(weft_publisher_register(q, "/frames", &other), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT_MESSAGE("single-publisher");
    EXPECT(weft_publisher_register_single(p, "/x", WEFT_TOPIC_LATEST, 8, &other),
           WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT_MESSAGE("pass 0");
    EXPECT(weft_publisher_register_single(p, "/x", 3, 0, &other), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_publisher_register_single(p, "/x", WEFT_TOPIC_INLINE, 57, &other),
           WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_publisher_register_single(NULL, "/x", WEFT_TOPIC_BLOCKS, 0, &other),
           WEFT_ERROR_INVALID_ARGUMENT);
    CHECK(other == NULL);

    weft_subscriber_t *sub = NULL;
    OK(weft_subscriber_connect(region, NULL, &sub));
    weft_subscription_t *s = NULL;
    OK(weft_subscriber_subscribe(sub, "/frames", &s));
    for (uint64_t i = 0; i < 20; i++) { /* around the 8-slot ring, blocks recycled */
        uint8_t buf[16];
        fill(buf, sizeof buf, i);
        uint64_t seq = 99;
        OK(weft_publisher_publish(p, t, buf, sizeof buf, &seq));
        CHECK(seq == i);
        expect_sample(s, buf, sizeof buf, i);
    }
    /* An inline topic with one publisher. */
    weft_topic_t *ti = NULL;
    OK(weft_publisher_register_single(p, "/level", WEFT_TOPIC_INLINE, 8, &ti));
    EXPECT(weft_publisher_register_single(q, "/level", WEFT_TOPIC_INLINE, 8, &other),
           WEFT_ERROR_IN_USE);
    OK(weft_publisher_publish(p, ti, (const uint8_t *)"level-01", 8, NULL));
    OK(weft_topic_free(&ti));

    /* The holder closes: the next registrant takes the lease and the sequence goes on. */
    OK(weft_topic_free(&t));
    OK(weft_publisher_close(&p));
    OK(weft_publisher_register_single(q, "/frames", WEFT_TOPIC_BLOCKS, 0, &other));
    uint64_t seq = 0;
    OK(weft_publisher_publish(q, other, (const uint8_t *)"next", 4, &seq));
    CHECK(seq == 20);
    expect_sample(s, "next", 4, 20);

    OK(weft_subscription_close(&s));
    OK(weft_subscriber_close(&sub));
    OK(weft_topic_free(&other));
    OK(weft_publisher_close(&q));
}

/* weft_loan_publish checks `seq` before it takes the loan: a refused (misaligned) seq
 * pointer leaves the loan with the caller, unpublished and still usable. */
static void a_refused_seq_pointer_does_not_consume_the_loan(void) {
    char region[160];
    unique_name(region, sizeof region, "seqptr");
    weft_pubsub_config cfg = small_config();
    weft_publisher_t *p = NULL;
    OK(weft_publisher_create(region, &cfg, &p));
    weft_topic_t *t = NULL;
    OK(weft_publisher_register(p, "/seq", &t));
    weft_subscriber_t *sub = NULL;
    OK(weft_subscriber_connect(region, NULL, &sub));
    weft_subscription_t *s = NULL;
    OK(weft_subscriber_subscribe(sub, "/seq", &s));
    weft_loan_t *loan = NULL;
    uint8_t *data = NULL;
    size_t cap = 0;
    OK(weft_publisher_loan(p, t, &loan, &data, &cap));
    memcpy(data, "kept", 4);
    OK(weft_loan_set_len(loan, 4));
    uint64_t words[2] = {0, 0};
    uint64_t *misaligned = (uint64_t *)((char *)words + 1);
    EXPECT(weft_loan_publish(&loan, misaligned), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT_MESSAGE("seq");
    CHECK(loan != NULL);
    weft_sample_t *none = NULL;
    EXPECT(weft_subscription_try_recv(s, &none), WEFT_ERROR_EMPTY);
    uint64_t seq = 99;
    OK(weft_loan_publish(&loan, &seq));
    CHECK(loan == NULL && seq == 0);
    expect_sample(s, "kept", 4, 0);
    OK(weft_subscription_close(&s));
    OK(weft_subscriber_close(&sub));
    OK(weft_topic_free(&t));
    OK(weft_publisher_close(&p));
}

int main(void) {
    RUN(loan_and_publish_byte_exact);
    RUN(single_publisher_topics);
    RUN(borrowed_receives);
    RUN(handles_outlive_their_makers);
    RUN(latest_and_history);
    RUN(lag_is_counted_exactly);
    RUN(waiting_for_another_thread);
    RUN(pool_limits);
    RUN(held_limit);
    RUN(large_latest_values);
    RUN(listings);
    RUN(names_and_objects);
    RUN(null_pointers);
    RUN(a_refused_seq_pointer_does_not_consume_the_loan);
    done("pubsub");
    return 0;
}
