/* Request/response from C: one-to-one channels (raw records and calls), a server with
 * several clients, replies in place and by id, and every error reachable from C. */
#include "check.h"

#include <pthread.h>
#include <stdbool.h>

/* The reply the serving side sends to a request: its length as 8 bytes, then the request
 * reversed. */
static size_t answer(const uint8_t *req, size_t len, uint8_t *out) {
    uint64_t n = len;
    memcpy(out, &n, 8);
    for (size_t i = 0; i < len; i++) out[8 + i] = req[len - 1 - i];
    return len + 8;
}

static int is_answer(const uint8_t *req, size_t len, const uint8_t *reply, size_t reply_len) {
    uint8_t want[4096 + 8];
    size_t n = answer(req, len, want);
    return reply_len == n && memcmp(reply, want, n) == 0;
}

struct listener {
    char name[160];
    const weft_channel_options *opts;
    weft_channel_t *ch;
    weft_status rc;
};

static void *listen_thread(void *arg) {
    struct listener *l = arg;
    l->rc = weft_channel_listen(l->name, 5000, l->opts, &l->ch);
    return NULL;
}

/* Both ends of a one-to-one channel, in this process, both with `opts` (NULL: defaults). */
static void pair_with(const char *tag, const weft_channel_options *opts,
                      weft_channel_t **listener, weft_channel_t **connector) {
    struct listener l;
    memset(&l, 0, sizeof l);
    unique_name(l.name, sizeof l.name, tag);
    l.opts = opts;
    pthread_t t;
    CHECK(pthread_create(&t, NULL, listen_thread, &l) == 0);
    OK(weft_channel_connect(l.name, 5000, opts, connector));
    CHECK(pthread_join(t, NULL) == 0);
    OK(l.rc);
    *listener = l.ch;
}

static void pair(const char *tag, weft_channel_t **listener, weft_channel_t **connector) {
    pair_with(tag, NULL, listener, connector);
}

static long long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Raw records both ways, byte-exact; EMPTY and TIMEOUT; CLOSED when the peer leaves. */
static void raw_records(void) {
    weft_channel_t *a = NULL, *b = NULL;
    pair("raw", &a, &b);
    size_t max = 0;
    OK(weft_channel_max_message_len(a, &max));
    CHECK(max > 1000);
    uint8_t buf[2048];
    for (uint64_t i = 0; i < 300; i++) {
        weft_channel_t *from = (i % 2) ? a : b, *to = (i % 2) ? b : a;
        size_t len = length_of(i, 2048);
        fill(buf, len, i);
        if (i % 3 == 0) {
            OK(weft_channel_send(from, buf, len));
        } else if (i % 3 == 1) {
            OK(weft_channel_try_send(from, buf, len));
        } else {
            OK(weft_channel_send_timeout(from, buf, len, 1000));
        }
        const uint8_t *data = NULL;
        size_t n = 0;
        if (i % 3 == 0) {
            OK(weft_channel_recv(to, &data, &n));
        } else if (i % 3 == 1) {
            OK(weft_channel_try_recv(to, &data, &n));
        } else {
            OK(weft_channel_recv_timeout(to, 1000, &data, &n));
        }
        CHECK(n == len && matches(data, n, i));
        OK(weft_channel_release(to));
    }
    const uint8_t *data = NULL;
    size_t n = 0;
    EXPECT(weft_channel_try_recv(a, &data, &n), WEFT_ERROR_EMPTY);
    EXPECT(weft_channel_recv_timeout(a, 20, &data, &n), WEFT_ERROR_TIMEOUT);
    static uint8_t big[1 << 17];
    EXPECT(weft_channel_send(a, big, sizeof big), WEFT_ERROR_TOO_LARGE);
    /* Fill b's incoming stream: FULL, then TIMEOUT. */
    while (weft_channel_try_send(a, buf, 1000) == WEFT_OK) {
    }
    EXPECT(weft_channel_try_send(a, buf, 1000), WEFT_ERROR_FULL);
    EXPECT(weft_channel_send_timeout(a, buf, 1000, 20), WEFT_ERROR_TIMEOUT);
    OK(weft_channel_close(&a));
    /* b drains what a sent, then learns that a left. */
    weft_status rc;
    while ((rc = weft_channel_try_recv(b, &data, &n)) == WEFT_OK) OK(weft_channel_release(b));
    EXPECT(rc, WEFT_ERROR_CLOSED);
    EXPECT(weft_channel_recv(b, &data, &n), WEFT_ERROR_CLOSED);
    OK(weft_channel_close(&b));
    EXPECT(weft_channel_close(&b), WEFT_ERROR_STATE);
}

struct serve_args {
    weft_channel_t *ch;
    int requests;
    bool by_id;
};

/* Answers `requests` requests: in place, or after releasing them, by id. */
static void *serve(void *arg) {
    struct serve_args *s = arg;
    for (int i = 0; i < s->requests; i++) {
        const uint8_t *req = NULL;
        size_t len = 0;
        uint64_t id = 0;
        if (i % 2) {
            OK(weft_channel_recv_request(s->ch, &req, &len, &id));
        } else {
            OK(weft_channel_recv_request_timeout(s->ch, 5000, &req, &len, &id));
        }
        uint8_t out[4096 + 8];
        size_t n = answer(req, len, out);
        if (s->by_id) {
            OK(weft_channel_release(s->ch));
            OK(weft_channel_reply_to(s->ch, id, out, n));
        } else {
            OK(weft_channel_reply(s->ch, out, n));
        }
    }
    return NULL;
}

/* Calls over a one-to-one channel: every reply byte-exact, whichever way it was sent. */
static void calls(void) {
    for (int by_id = 0; by_id < 2; by_id++) {
        weft_channel_t *server = NULL, *client = NULL;
        pair(by_id ? "calls-id" : "calls", &server, &client);
        struct serve_args args = {server, 200, by_id};
        pthread_t t;
        CHECK(pthread_create(&t, NULL, serve, &args) == 0);
        uint8_t req[4096];
        for (uint64_t i = 0; i < 200; i++) {
            size_t len = length_of(i, 4096);
            fill(req, len, i);
            const uint8_t *reply = NULL;
            size_t n = 0;
            if (i % 2) {
                OK(weft_channel_call(client, req, len, &reply, &n));
            } else {
                OK(weft_channel_call_timeout(client, req, len, 5000, &reply, &n));
            }
            CHECK(is_answer(req, len, reply, n));
            OK(weft_channel_release(client));
        }
        CHECK(pthread_join(t, NULL) == 0);
        OK(weft_channel_close(&server));
        OK(weft_channel_close(&client));
    }
}

/* A channel lending a message refuses everything else; replies need a request. */
static void lending_rules(void) {
    weft_channel_t *a = NULL, *b = NULL;
    pair("state", &a, &b);
    const uint8_t *data = NULL;
    size_t n = 0;
    uint64_t id = 0;
    EXPECT(weft_channel_release(a), WEFT_ERROR_STATE);
    EXPECT(weft_channel_reply(a, (const uint8_t *)"r", 1), WEFT_ERROR_STATE);
    EXPECT_MESSAGE("no request");

    OK(weft_channel_send(b, (const uint8_t *)"raw", 3));
    OK(weft_channel_recv(a, &data, &n));
    CHECK(n == 3 && memcmp(data, "raw", 3) == 0);
    EXPECT(weft_channel_send(a, (const uint8_t *)"x", 1), WEFT_ERROR_STATE);
    EXPECT(weft_channel_try_recv(a, &data, &n), WEFT_ERROR_STATE);
    EXPECT(weft_channel_reply(a, (const uint8_t *)"r", 1), WEFT_ERROR_STATE); /* a record */
    EXPECT(weft_channel_reply_to(a, 1, (const uint8_t *)"r", 1), WEFT_ERROR_STATE);
    EXPECT(weft_channel_max_message_len(a, &n), WEFT_ERROR_STATE);
    OK(weft_channel_release(a));
    EXPECT(weft_channel_release(a), WEFT_ERROR_STATE); /* released twice */

    /* A call nobody answers times out; the channel is usable afterwards. */
    EXPECT(weft_channel_call_timeout(b, (const uint8_t *)"q", 1, 20, &data, &n),
           WEFT_ERROR_TIMEOUT);
    OK(weft_channel_recv_request(a, &data, &n, &id));
    CHECK(n == 1 && data[0] == 'q');
    EXPECT(weft_channel_try_recv_request(a, &data, &n, &id), WEFT_ERROR_STATE);
    /* Closing a channel that lends a request releases it unanswered. */
    OK(weft_channel_close(&a));
    EXPECT(weft_channel_recv_timeout(b, 1000, &data, &n), WEFT_ERROR_CLOSED);
    OK(weft_channel_close(&b));
}

/* Reply in place from the request's own bytes (the reply may point into the request). */
static void reply_from_the_request(void) {
    weft_channel_t *a = NULL, *b = NULL;
    pair("echo", &a, &b);
    uint8_t req[100];
    fill(req, sizeof req, 77);
    OK(weft_channel_send(b, req, 0)); /* a raw empty record first */
    const uint8_t *data = NULL;
    size_t n = 0;
    uint64_t id = 0;
    OK(weft_channel_recv(a, &data, &n));
    CHECK(n == 0);
    OK(weft_channel_release(a));
    EXPECT(weft_channel_try_recv_request(a, &data, &n, &id), WEFT_ERROR_EMPTY);
    /* Send a request without waiting: a call with a 0 ms budget gives up at once. */
    EXPECT(weft_channel_call_timeout(b, req, sizeof req, 0, &data, &n), WEFT_ERROR_TIMEOUT);
    OK(weft_channel_try_recv_request(a, &data, &n, &id));
    CHECK(n == sizeof req && matches(data, n, 77));
    OK(weft_channel_reply(a, data, n)); /* echo the request's own bytes */
    EXPECT(weft_channel_reply(a, data, n), WEFT_ERROR_STATE); /* answered already */
    /* A reply whose bytes are refused releases the request all the same, as documented:
       nothing is lent afterwards, and the next request comes. */
    EXPECT(weft_channel_call_timeout(b, req, 1, 0, &data, &n), WEFT_ERROR_TIMEOUT);
    OK(weft_channel_try_recv_request(a, &data, &n, &id));
    EXPECT(weft_channel_reply(a, NULL, 5), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_channel_release(a), WEFT_ERROR_STATE); /* nothing lent any more */
    EXPECT(weft_channel_call_timeout(b, req, 2, 0, &data, &n), WEFT_ERROR_TIMEOUT);
    OK(weft_channel_try_recv_request(a, &data, &n, &id));
    CHECK(n == 2);
    OK(weft_channel_release(a));
    OK(weft_channel_close(&a));
    OK(weft_channel_close(&b));
}

/* A reply the client never reads: the server's outgoing stream fills. The try_ forms say
 * FULL, the timed ones TIMEOUT within their bound, and a lent request is released either
 * way (its id still takes a later reply). The blocking forms only ever run with room. */
static void replies_to_a_client_that_does_not_read(void) {
    weft_channel_options opts = {0};
    opts.capacity = 4096; /* two replies of 1500 bytes fill a stream */
    weft_channel_t *server = NULL, *client = NULL;
    pair_with("unread", &opts, &server, &client);
    const uint8_t *data = NULL;
    size_t n = 0;
    uint64_t ids[5] = {0};
    /* Five requests sent, their replies never awaited (a 0 ms call gives up at once). */
    for (int i = 0; i < 5; i++) {
        uint8_t q = (uint8_t)('a' + i);
        EXPECT(weft_channel_call_timeout(client, &q, 1, 0, &data, &n), WEFT_ERROR_TIMEOUT);
    }
    static uint8_t big[5][1500];
    for (int i = 0; i < 5; i++) fill(big[i], sizeof big[i], 500 + i);
    EXPECT(weft_channel_try_reply(server, big[0], 1500), WEFT_ERROR_STATE); /* nothing lent */
    EXPECT_MESSAGE("no request");

    /* Two replies fit: one blocking (there is room), one try_. */
    OK(weft_channel_recv_request(server, &data, &n, &ids[0]));
    CHECK(n == 1 && data[0] == 'a');
    OK(weft_channel_reply(server, big[0], 1500));
    OK(weft_channel_recv_request(server, &data, &n, &ids[1]));
    OK(weft_channel_try_reply(server, big[1], 1500));

    /* The stream is full: FULL at once, and the request is released. */
    OK(weft_channel_recv_request(server, &data, &n, &ids[2]));
    CHECK(n == 1 && data[0] == 'c');
    EXPECT(weft_channel_try_reply(server, big[2], 1500), WEFT_ERROR_FULL);
    EXPECT(weft_channel_release(server), WEFT_ERROR_STATE); /* nothing lent any more */

    /* TIMEOUT after the bound, not before and not much after; released too. */
    OK(weft_channel_try_recv_request(server, &data, &n, &ids[3]));
    CHECK(n == 1 && data[0] == 'd');
    long long t0 = now_ms();
    EXPECT(weft_channel_reply_timeout(server, big[3], 1500, 100), WEFT_ERROR_TIMEOUT);
    long long waited = now_ms() - t0;
    CHECK(waited >= 100 && waited < 100 + 4000);
    EXPECT(weft_channel_release(server), WEFT_ERROR_STATE);

    /* Refused bytes release the request as well, with either form. */
    OK(weft_channel_recv_request_timeout(server, 1000, &data, &n, &ids[4]));
    CHECK(n == 1 && data[0] == 'e');
    EXPECT(weft_channel_reply_timeout(server, NULL, 5, 10), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_channel_release(server), WEFT_ERROR_STATE);
    EXPECT(weft_channel_try_recv_request(server, &data, &n, &ids[4]), WEFT_ERROR_EMPTY);

    /* By id: FULL and TIMEOUT the same way. */
    EXPECT(weft_channel_try_reply_to(server, ids[2], big[2], 1500), WEFT_ERROR_FULL);
    t0 = now_ms();
    EXPECT(weft_channel_reply_to_timeout(server, ids[3], big[3], 1500, 100), WEFT_ERROR_TIMEOUT);
    waited = now_ms() - t0;
    CHECK(waited >= 100 && waited < 100 + 4000);

    /* The client reads (raw records: 8 bytes of id, little-endian, then the reply); the
     * released requests are answered by id once there is room, and every reply arrives
     * byte-exact. */
    for (int i = 0; i < 4; i++) {
        if (i == 2) OK(weft_channel_reply_to_timeout(server, ids[2], big[2], 1500, 1000));
        if (i == 3) OK(weft_channel_try_reply_to(server, ids[3], big[3], 1500));
        OK(weft_channel_recv_timeout(client, 1000, &data, &n));
        CHECK(n == 8 + 1500);
        uint64_t id = 0;
        for (int b = 7; b >= 0; b--) id = id << 8 | data[b];
        CHECK(id == ids[i]);
        CHECK(matches(data + 8, 1500, 500 + i));
        OK(weft_channel_release(client));
    }
    EXPECT(weft_channel_try_recv(client, &data, &n), WEFT_ERROR_EMPTY);
    /* The request-lent rule holds for the new forms: reply_to refuses while lending. */
    OK(weft_channel_send(server, (const uint8_t *)"r", 1));
    OK(weft_channel_recv(client, &data, &n));
    EXPECT(weft_channel_try_reply_to(client, 1, big[0], 1), WEFT_ERROR_STATE);
    EXPECT(weft_channel_reply_to_timeout(client, 1, big[0], 1, 10), WEFT_ERROR_STATE);
    EXPECT(weft_channel_try_reply(client, big[0], 1), WEFT_ERROR_STATE); /* a record */
    OK(weft_channel_release(client));
    OK(weft_channel_close(&server));
    OK(weft_channel_close(&client));
}

/* A call that timed out forgets its request: the late reply is dropped by the next call on
 * the channel, which gets its own reply; a raw receive, which knows nothing of calls,
 * returns it like any record. */
static void late_replies(void) {
    weft_channel_t *server = NULL, *client = NULL;
    pair("late", &server, &client);
    const uint8_t *data = NULL;
    size_t n = 0;
    uint64_t id = 0;
    EXPECT(weft_channel_call_timeout(client, (const uint8_t *)"one", 3, 0, &data, &n),
           WEFT_ERROR_TIMEOUT);
    OK(weft_channel_recv_request(server, &data, &n, &id));
    OK(weft_channel_reply(server, (const uint8_t *)"late", 4));
    struct serve_args args = {server, 1, false};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, serve, &args) == 0);
    OK(weft_channel_call_timeout(client, (const uint8_t *)"two", 3, 5000, &data, &n));
    CHECK(is_answer((const uint8_t *)"two", 3, data, n));
    OK(weft_channel_release(client));
    CHECK(pthread_join(t, NULL) == 0);

    EXPECT(weft_channel_call_timeout(client, (const uint8_t *)"three", 5, 0, &data, &n),
           WEFT_ERROR_TIMEOUT);
    OK(weft_channel_recv_request(server, &data, &n, &id));
    OK(weft_channel_reply(server, (const uint8_t *)"late3", 5));
    OK(weft_channel_recv_timeout(client, 1000, &data, &n));
    CHECK(n == 8 + 5 && memcmp(data + 8, "late3", 5) == 0);
    OK(weft_channel_release(client));
    OK(weft_channel_close(&server));
    OK(weft_channel_close(&client));
}

struct client_args {
    char name[160];
    int index;
    int calls;
};

static void *client(void *arg) {
    struct client_args *c = arg;
    weft_channel_t *ch = NULL;
    OK(weft_server_connect(c->name, 5000, NULL, &ch));
    uint8_t req[1024];
    for (int i = 0; i < c->calls; i++) {
        uint64_t seed = (uint64_t)c->index * 100000 + i;
        size_t len = length_of(seed, 1024);
        fill(req, len, seed);
        const uint8_t *reply = NULL;
        size_t n = 0;
        OK(weft_channel_call_timeout(ch, req, len, 5000, &reply, &n));
        CHECK(is_answer(req, len, reply, n));
        OK(weft_channel_release(ch));
    }
    OK(weft_channel_close(&ch));
    return NULL;
}

/* A server accepts three clients, each on its own thread, and serves them byte-exact. */
static void server_with_clients(void) {
    char name[160];
    unique_name(name, sizeof name, "server");
    weft_channel_options opts = {0};
    opts.slots = 4;
    weft_server_t *server = NULL;
    OK(weft_server_bind(name, &opts, &server));
    weft_server_t *second = NULL;
    EXPECT(weft_server_bind(name, NULL, &second), WEFT_ERROR_IN_USE);
    weft_channel_t *none = NULL;
    EXPECT(weft_server_try_accept(server, &none), WEFT_ERROR_EMPTY);
    EXPECT(weft_server_accept_timeout(server, 20, &none), WEFT_ERROR_TIMEOUT);
    CHECK(none == NULL);

    enum { CLIENTS = 3, CALLS = 100 };
    struct client_args args[CLIENTS];
    pthread_t clients[CLIENTS], servers[CLIENTS];
    struct serve_args serving[CLIENTS];
    for (int i = 0; i < CLIENTS; i++) {
        memcpy(args[i].name, name, sizeof name);
        args[i].index = i;
        args[i].calls = CALLS;
        CHECK(pthread_create(&clients[i], NULL, client, &args[i]) == 0);
    }
    for (int i = 0; i < CLIENTS; i++) {
        weft_channel_t *ch = NULL;
        if (i == 0) {
            OK(weft_server_accept(server, &ch));
        } else {
            OK(weft_server_accept_timeout(server, 5000, &ch));
        }
        serving[i] = (struct serve_args){ch, CALLS, i == 1};
        CHECK(pthread_create(&servers[i], NULL, serve, &serving[i]) == 0);
    }
    for (int i = 0; i < CLIENTS; i++) {
        CHECK(pthread_join(clients[i], NULL) == 0);
        CHECK(pthread_join(servers[i], NULL) == 0);
        OK(weft_channel_close(&serving[i].ch));
    }
    OK(weft_server_close(&server));
    EXPECT(weft_server_close(&server), WEFT_ERROR_STATE);
}

/* Names, missing servers, options out of range. */
static void names_and_objects(void) {
    char name[160];
    unique_name(name, sizeof name, "absent");
    weft_channel_t *ch = NULL;
    weft_server_t *server = NULL;
    EXPECT(weft_server_connect(name, 20, NULL, &ch), WEFT_ERROR_NOT_FOUND);
    EXPECT(weft_channel_connect(name, 20, NULL, &ch), WEFT_ERROR_TIMEOUT);
    EXPECT(weft_channel_listen("bad/name", 20, NULL, &ch), WEFT_ERROR_INVALID_NAME);
    char long_name[170];
    memset(long_name, 'n', 159);
    long_name[159] = 0; /* a channel name leaves room for its stream suffixes: at most 158 */
    EXPECT(weft_server_bind(long_name, NULL, &server), WEFT_ERROR_INVALID_NAME);
    EXPECT(weft_channel_listen(long_name, 20, NULL, &ch), WEFT_ERROR_INVALID_NAME);
    EXPECT(weft_server_connect("\xe2\x82", 20, NULL, &ch), WEFT_ERROR_INVALID_NAME);
    weft_channel_options opts = {0};
    opts.slots = 1000;
    EXPECT(weft_server_bind(name, &opts, &server), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT_MESSAGE("slots");
    opts.slots = 0;
    opts.wait = 12;
    EXPECT(weft_server_bind(name, &opts, &server), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_channel_listen(name, 20, &opts, &ch), WEFT_ERROR_INVALID_ARGUMENT);
    CHECK(ch == NULL && server == NULL);
}

/* Every pointer argument is checked. */
static void null_pointers(void) {
    weft_channel_t *a = NULL, *b = NULL;
    weft_server_t *s = NULL;
    char name[160];
    unique_name(name, sizeof name, "nulls");
    EXPECT(weft_channel_listen(NULL, 1, NULL, &a), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_channel_listen(name, 1, NULL, NULL), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_channel_connect(NULL, 1, NULL, &a), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_channel_connect(name, 1, NULL, NULL), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_server_connect(NULL, 1, NULL, &a), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_server_connect(name, 1, NULL, NULL), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_server_bind(NULL, NULL, &s), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_server_bind(name, NULL, NULL), WEFT_ERROR_INVALID_ARGUMENT);
    OK(weft_server_bind(name, NULL, &s));
    EXPECT(weft_server_accept(NULL, &a), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_server_accept(s, NULL), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_server_try_accept(NULL, &a), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_server_try_accept(s, NULL), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_server_accept_timeout(NULL, 1, &a), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_server_accept_timeout(s, 1, NULL), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_server_close(NULL), WEFT_ERROR_INVALID_ARGUMENT);
    OK(weft_server_close(&s));

    pair("nullpair", &a, &b);
    uint8_t x = 0;
    const uint8_t *data = NULL;
    size_t n = 0;
    uint64_t id = 0;
    EXPECT(weft_channel_max_message_len(NULL, &n), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_channel_max_message_len(a, NULL), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_channel_send(NULL, &x, 1), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_channel_send(a, NULL, 1), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_channel_try_send(NULL, &x, 1), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_channel_try_send(a, NULL, 1), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_channel_send_timeout(NULL, &x, 1, 1), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_channel_send_timeout(a, NULL, 1, 1), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_channel_recv(NULL, &data, &n), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_channel_recv(a, NULL, &n), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_channel_recv(a, &data, NULL), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_channel_try_recv(NULL, &data, &n), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_channel_try_recv(a, NULL, &n), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_channel_try_recv(a, &data, NULL), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_channel_recv_timeout(NULL, 1, &data, &n), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_channel_recv_timeout(a, 1, NULL, &n), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_channel_recv_timeout(a, 1, &data, NULL), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_channel_release(NULL), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_channel_call(NULL, &x, 1, &data, &n), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_channel_call(b, NULL, 1, &data, &n), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_channel_call(b, &x, 1, NULL, &n), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_channel_call(b, &x, 1, &data, NULL), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_channel_call_timeout(NULL, &x, 1, 1, &data, &n), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_channel_call_timeout(b, NULL, 1, 1, &data, &n), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_channel_call_timeout(b, &x, 1, 1, NULL, &n), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_channel_call_timeout(b, &x, 1, 1, &data, NULL), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_channel_recv_request(NULL, &data, &n, &id), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_channel_recv_request(a, NULL, &n, &id), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_channel_recv_request(a, &data, NULL, &id), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_channel_recv_request(a, &data, &n, NULL), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_channel_try_recv_request(NULL, &data, &n, &id), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_channel_try_recv_request(a, NULL, &n, &id), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_channel_try_recv_request(a, &data, NULL, &id), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_channel_try_recv_request(a, &data, &n, NULL), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_channel_recv_request_timeout(NULL, 1, &data, &n, &id),
           WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_channel_recv_request_timeout(a, 1, NULL, &n, &id), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_channel_recv_request_timeout(a, 1, &data, NULL, &id), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_channel_recv_request_timeout(a, 1, &data, &n, NULL), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_channel_reply(NULL, &x, 1), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_channel_reply(a, NULL, 1), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_channel_reply_to(NULL, 1, &x, 1), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_channel_reply_to(a, 1, NULL, 1), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_channel_try_reply(NULL, &x, 1), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_channel_try_reply(a, NULL, 1), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_channel_reply_timeout(NULL, &x, 1, 1), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_channel_reply_timeout(a, NULL, 1, 1), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_channel_try_reply_to(NULL, 1, &x, 1), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_channel_try_reply_to(a, 1, NULL, 1), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_channel_reply_to_timeout(NULL, 1, &x, 1, 1), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_channel_reply_to_timeout(a, 1, NULL, 1, 1), WEFT_ERROR_INVALID_ARGUMENT);
    EXPECT(weft_channel_close(NULL), WEFT_ERROR_INVALID_ARGUMENT);
    /* Nothing above sent anything. */
    EXPECT(weft_channel_try_recv(a, &data, &n), WEFT_ERROR_EMPTY);
    OK(weft_channel_close(&a));
    OK(weft_channel_close(&b));
}

int main(void) {
    RUN(raw_records);
    RUN(calls);
    RUN(lending_rules);
    RUN(reply_from_the_request);
    RUN(replies_to_a_client_that_does_not_read);
    RUN(late_replies);
    RUN(server_with_clients);
    RUN(names_and_objects);
    RUN(null_pointers);
    done("channel");
    return 0;
}
