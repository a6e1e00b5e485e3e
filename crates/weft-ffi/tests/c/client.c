/* The C side of the cross-language tests (tests/ffi_cross.rs), run as its own process
 * against a Rust peer:
 *
 *   client call NAME N       connects to the Rust server NAME and makes N calls; request i
 *                            is length_of(i, 4096) bytes of pattern i, and the reply must
 *                            be its length (8 bytes, little-endian) then the request
 *                            reversed, byte for byte.
 *   client publish REGION N  joins the Rust publisher's region REGION and publishes N
 *                            messages on /from-c, message i being length_of(i, 1024) bytes
 *                            of pattern i, written in place in loaned blocks.
 *   client closed REGION N   joins REGION as a publisher and a subscriber of the Rust
 *                            publisher's /t, receives the N messages it publishes, then
 *                            (once the Rust publisher unregistered /t) expects
 *                            WEFT_ERROR_CLOSED from every receive and every publish.
 *
 * Prints "ok client-MODE N" and exits 0 when everything matched. */
#include "check.h"

static void call(const char *name, uint64_t n) {
    weft_channel_t *ch = NULL;
    OK(weft_server_connect(name, 10000, NULL, &ch));
    static uint8_t req[4096];
    for (uint64_t i = 0; i < n; i++) {
        size_t len = length_of(i, 4096);
        fill(req, len, i);
        const uint8_t *reply = NULL;
        size_t reply_len = 0;
        OK(weft_channel_call_timeout(ch, req, len, 10000, &reply, &reply_len));
        CHECK(reply_len == len + 8);
        uint64_t echoed = 0;
        memcpy(&echoed, reply, 8);
        CHECK(echoed == len);
        for (size_t j = 0; j < len; j++) {
            if (reply[8 + j] != req[len - 1 - j]) FAIL("reply %llu differs at byte %zu",
                                                       (unsigned long long)i, j);
        }
        OK(weft_channel_release(ch));
    }
    OK(weft_channel_close(&ch));
}

static void publish(const char *region, uint64_t n) {
    weft_publisher_t *p = NULL;
    OK(weft_publisher_open(region, NULL, &p));
    weft_topic_t *t = NULL;
    OK(weft_publisher_register(p, "/from-c", &t));
    for (uint64_t i = 0; i < n; i++) {
        weft_loan_t *loan = NULL;
        uint8_t *data = NULL;
        size_t cap = 0;
        weft_status rc;
        /* The pool may be empty for a moment while the subscriber holds blocks: retry,
         * for ten seconds at most. */
        for (int tries = 0; tries < 10000; tries++) {
            rc = weft_publisher_loan(p, t, &loan, &data, &cap);
            if (rc != WEFT_ERROR_FULL) break;
            sleep_ms(1);
        }
        OK(rc);
        size_t len = length_of(i, 1024);
        CHECK(cap >= len);
        fill(data, len, i);
        OK(weft_loan_set_len(loan, len));
        OK(weft_loan_publish(&loan, NULL));
    }
    OK(weft_topic_free(&t));
    OK(weft_publisher_close(&p));
}

static void closed(const char *region, uint64_t n) {
    weft_publisher_t *p = NULL;
    weft_topic_t *t = NULL;
    OK(weft_publisher_open(region, NULL, &p));
    OK(weft_publisher_register(p, "/t", &t));
    weft_subscriber_t *s = NULL;
    weft_subscription_t *sub = NULL;
    OK(weft_subscriber_connect(region, NULL, &s));
    OK(weft_subscriber_subscribe(s, "/t", &sub));
    weft_sample_t *sm = NULL;
    for (uint64_t i = 0; i < n; i++) {
        OK(weft_subscription_recv_timeout(sub, 10000, &sm));
        const uint8_t *d = NULL;
        size_t len = 0;
        OK(weft_sample_data(sm, &d, &len));
        uint64_t got = 0;
        CHECK(len == 8);
        memcpy(&got, d, 8);
        CHECK(got == i);
        OK(weft_sample_release(&sm));
    }
    /* Everything published before the unregistration was received: closed, whichever way. */
    EXPECT(weft_subscription_recv_timeout(sub, 10000, &sm), WEFT_ERROR_CLOSED);
    EXPECT(weft_subscription_try_recv(sub, &sm), WEFT_ERROR_CLOSED);
    EXPECT(weft_subscription_recv(sub, &sm), WEFT_ERROR_CLOSED);
    EXPECT(weft_publisher_publish(p, t, (const uint8_t *)"x", 1, NULL), WEFT_ERROR_CLOSED);
    weft_loan_t *loan = NULL;
    uint8_t *data = NULL;
    size_t cap = 0;
    EXPECT(weft_publisher_loan(p, t, &loan, &data, &cap), WEFT_ERROR_CLOSED);
    CHECK(loan == NULL);
    OK(weft_subscription_close(&sub));
    OK(weft_subscriber_close(&s));
    OK(weft_topic_free(&t));
    OK(weft_publisher_close(&p));
}

int main(int argc, char **argv) {
    if (argc != 4) FAIL("usage: client call|publish|closed NAME N");
    uint64_t n = strtoull(argv[3], NULL, 10);
    if (strcmp(argv[1], "call") == 0) {
        call(argv[2], n);
    } else if (strcmp(argv[1], "publish") == 0) {
        publish(argv[2], n);
    } else if (strcmp(argv[1], "closed") == 0) {
        closed(argv[2], n);
    } else {
        FAIL("unknown mode %s", argv[1]);
    }
    printf("ok client-%s %llu\n", argv[1], (unsigned long long)n);
    return 0;
}
