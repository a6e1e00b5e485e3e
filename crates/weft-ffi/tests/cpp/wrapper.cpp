// The C++17 wrapper (include/weft.hpp): RAII ownership, moves, guards that release,
// exceptions that carry the code and the message, optional results, and data byte-exact.
#include "weft.hpp"

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include <unistd.h>

using namespace std::chrono_literals;

static unsigned long checks = 0;

#define CHECK(cond)                                                                      \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            std::exit(1);                                                                \
        }                                                                                \
        checks++;                                                                        \
    } while (0)

// Runs `body`, which must throw weft::error with `code`; returns the error.
template <typename F>
static weft::error expect_error(weft_status code, F &&body, int line) {
    try {
        body();
    } catch (const weft::error &e) {
        if (e.code() != code) {
            std::fprintf(stderr, "line %d: threw %d (%s: %s), expected %d (%s)\n", line, e.code(),
                         e.code_string(), e.what(), code, weft_error_string(code));
            std::exit(1);
        }
        checks++;
        return e;
    }
    std::fprintf(stderr, "line %d: did not throw, expected %d (%s)\n", line, code,
                 weft_error_string(code));
    std::exit(1);
}
#define EXPECT_ERROR(code, ...) expect_error(code, [&] { __VA_ARGS__; }, __LINE__)

static std::string name(const char *tag) {
    const char *prefix = std::getenv("WEFT_TEST_PREFIX");
    return std::string(prefix ? prefix : "cpp") + "-" + tag;
}

static std::vector<std::uint8_t> pattern(std::size_t len, std::uint64_t seed) {
    std::vector<std::uint8_t> v(len);
    for (std::size_t i = 0; i < len; i++) v[i] = std::uint8_t(seed * 131 + i * 7 + (i >> 8));
    return v;
}

static bool same(weft::bytes_view a, const std::vector<std::uint8_t> &b) {
    return a.size() == b.size() && (b.empty() || std::memcmp(a.data(), b.data(), b.size()) == 0);
}

// Every owning class is move-only.
static_assert(!std::is_copy_constructible_v<weft::stream_writer>);
static_assert(!std::is_copy_assignable_v<weft::stream_reader>);
static_assert(!std::is_copy_constructible_v<weft::read_grant>);
static_assert(!std::is_copy_constructible_v<weft::write_grant>);
static_assert(!std::is_copy_constructible_v<weft::publisher>);
static_assert(!std::is_copy_constructible_v<weft::loan>);
static_assert(!std::is_copy_constructible_v<weft::sample>);
static_assert(!std::is_copy_constructible_v<weft::channel>);
static_assert(!std::is_copy_constructible_v<weft::request>);
static_assert(std::is_nothrow_move_constructible_v<weft::stream_writer>);
static_assert(std::is_nothrow_move_assignable_v<weft::sample>);

static void stream() {
    auto n = name("stream");
    auto writer = weft::stream_writer::create(n, 1 << 16);
    auto reader = weft::stream_reader::open_for(n, 1s);
    for (std::uint64_t i = 0; i < 300; i++) {
        auto data = pattern(i * 37 % 3000, i);
        if (i % 2) {
            writer.write(data);
        } else {
            auto grant = writer.reserve(data.size() + 10);
            if (!data.empty()) std::memcpy(grant.data(), data.data(), data.size());
            grant.commit(data.size());
            EXPECT_ERROR(WEFT_ERROR_STATE, grant.commit(0));  // committed already
            CHECK(grant.data() == nullptr && grant.size() == 0);  // the room is the reader's now
        }
        auto rec = (i % 3) ? reader.read() : std::move(*reader.read_for(1s));
        CHECK(same(rec.bytes(), pattern(i * 37 % 3000, i)));
    }  // each read_grant released at the end of its iteration
    CHECK(!reader.try_read());
    CHECK(!reader.read_for(10ms));

    {
        auto grant = writer.reserve(4);  // abandoned by its destructor
        std::memcpy(grant.data(), "lost", 4);
        auto e = EXPECT_ERROR(WEFT_ERROR_STATE, writer.write(std::string_view("x")));
        CHECK(std::string(e.what()).find("lending") != std::string::npos);
    }
    writer.write(std::string_view("kept"));
    {
        auto rec = reader.read();
        CHECK(rec.str() == "kept");
        EXPECT_ERROR(WEFT_ERROR_STATE, (void)reader.try_read());  // one grant at a time
        auto moved = std::move(rec);  // the grant moves; released once, by `moved`
        CHECK(moved.str() == "kept");
        CHECK(rec.data() == nullptr && rec.size() == 0);  // nothing left to read through
        moved.release();
        CHECK(moved.data() == nullptr && moved.str().empty());
    }
    CHECK(!reader.try_read());

    // Deferred records: unseen until flushed, then in order.
    writer.write_deferred(std::string_view("d1"));
    writer.write_deferred(std::string_view("d2"));
    CHECK(!reader.try_read());
    writer.flush();
    CHECK(reader.read().str() == "d1");
    CHECK(reader.read().str() == "d2");
    CHECK(writer.write_deferred_for(std::string_view("d3"), 10ms));
    writer.flush();
    CHECK(reader.read().str() == "d3");
    while (writer.try_write_deferred(std::string(1000, 'g'))) {
    }
    CHECK(!writer.write_deferred_for(std::string(1000, 'g'), 10ms));
    while (auto rec = reader.try_read()) CHECK(rec->size() == 1000);

    while (writer.try_write(std::string(1000, 'f'))) {
    }
    CHECK(!writer.write_for(std::string(1000, 'f'), 10ms));
    CHECK(!writer.try_reserve(1000));
    CHECK(!writer.reserve_for(1000, 10ms));
    writer.set_wait(WEFT_WAIT_PARK);
    reader.set_wait(WEFT_WAIT_ADAPTIVE);
    EXPECT_ERROR(WEFT_ERROR_INVALID_ARGUMENT, writer.set_wait(77));
    CHECK(writer.max_record_len() >= 1000);
    EXPECT_ERROR(WEFT_ERROR_TOO_LARGE, writer.write(std::vector<std::uint8_t>(1 << 16)));

    // Moving the writer moves ownership; the moved-from object is empty.
    weft::stream_writer other = std::move(writer);
    CHECK(other && !writer);
    other.close();
    CHECK(!other);
    std::size_t drained = 0;
    for (;;) {
        try {
            auto rec = reader.read();
            CHECK(rec.size() == 1000);
            drained++;
        } catch (const weft::error &e) {
            CHECK(e.code() == WEFT_ERROR_CLOSED);
            break;
        }
    }
    CHECK(drained > 10);

    auto missing = EXPECT_ERROR(WEFT_ERROR_NOT_FOUND, weft::stream_reader::open(name("nope")));
    CHECK(std::string(missing.what()).find(name("nope")) != std::string::npos);
    CHECK(std::string(missing.code_string()) == "not found");
    EXPECT_ERROR(WEFT_ERROR_INVALID_NAME, weft::stream_writer::create("a/b", 4096));
}

static void pubsub() {
    auto region = name("pubsub");
    weft_pubsub_config cfg{};
    cfg.blocks = 64;
    cfg.ring_slots = 8;
    cfg.block_size = 512;
    auto pub = weft::publisher::create(region, &cfg);
    CHECK(pub.max_len() == 512);
    auto prices = pub.register_topic("/prices/AAPL");
    CHECK(prices.name() == "/prices/AAPL");
    auto latest = pub.register_topic("/latest", WEFT_TOPIC_LATEST);
    auto sub = weft::subscriber::connect_for(region, 1s);
    auto s = sub.subscribe("/prices/AAPL");
    auto l = sub.subscribe("/latest");

    for (std::uint64_t i = 0; i < 100; i++) {
        auto data = pattern(i % 500, i);
        std::uint64_t seq;
        if (i % 2) {
            seq = pub.publish(prices, data);
        } else {
            auto loan = pub.loan(prices);
            CHECK(loan.capacity() == 512);
            if (!data.empty()) std::memcpy(loan.data(), data.data(), data.size());
            loan.set_len(data.size());
            seq = loan.publish();
            CHECK(!loan);
            CHECK(loan.data() == nullptr && loan.capacity() == 0 && loan.bytes().size() == 0);
            EXPECT_ERROR(WEFT_ERROR_STATE, loan.publish());
        }
        CHECK(seq == i);
        auto got = (i % 2) ? s.recv() : std::move(*s.recv_for(1s));
        CHECK(got.seq() == i && same(got.bytes(), data));
    }
    CHECK(!s.try_recv());

    pub.publish(latest, std::string_view("1"));
    pub.publish(latest, std::string_view("2"));
    CHECK(l.recv_for(1s)->str() == "2");

    // Inline topics: a fixed message size, the bytes copied through the ring's slots.
    auto ticks = pub.register_inline("/ticks", 8);
    auto t = sub.subscribe("/ticks");
    EXPECT_ERROR(WEFT_ERROR_INVALID_ARGUMENT, pub.publish(ticks, std::string_view("short")));
    CHECK(pub.publish(ticks, std::string_view("12345678")) == 0);
    CHECK(t.recv_for(1s)->str() == "12345678");
    auto price = pub.register_inline_latest("/price", 8);
    auto last = sub.subscribe("/price");
    for (auto v : {"price-01", "price-02", "price-03"}) pub.publish(price, std::string_view(v));
    CHECK(last.recv_for(1s)->str() == "price-03");
    CHECK(!last.try_recv());

    // A single-publisher topic: another live publisher is refused.
    auto frames = pub.register_single("/frames");
    auto f = sub.subscribe("/frames");
    auto other = weft::publisher::open(region);
    EXPECT_ERROR(WEFT_ERROR_IN_USE, (void)other.register_single("/frames"));
    CHECK(pub.publish(frames, std::string_view("frame")) == 0);
    CHECK(f.recv_for(1s)->str() == "frame");

    // Lag: the exception says how many messages were missed.
    for (int i = 0; i < 30; i++) pub.publish(prices, std::string_view("tick"));
    auto lag = EXPECT_ERROR(WEFT_ERROR_LAGGED, (void)s.try_recv());
    CHECK(lag.skipped() > 0);
    std::uint64_t received = 0;
    while (auto m = s.try_recv()) {
        CHECK(m->str() == "tick");
        received++;
    }
    CHECK(received + lag.skipped() == 30);

    // Borrowed receives: lent in place, one at a time, given back by the destructor.
    for (std::uint64_t i = 0; i < 20; i++) {
        auto data = pattern(100, i);
        auto seq = pub.publish(prices, data);
        if (i % 2) {
            auto b = s.recv_borrowed();
            CHECK(b.seq() == seq && same(b.bytes(), data));
            EXPECT_ERROR(WEFT_ERROR_STATE, (void)s.try_recv());
            EXPECT_ERROR(WEFT_ERROR_STATE, (void)s.try_recv_borrowed());
        } else {
            auto b = s.recv_borrowed_for(1s);
            CHECK(b && b->seq() == seq && same(b->bytes(), data));
            b->release();
            CHECK(b->data() == nullptr && b->size() == 0);  // the block went back
            CHECK(!s.try_recv_borrowed());
        }
    }
    CHECK(!s.try_recv_borrowed());

    // A sample outlives its subscription; a loan outlives its publisher object.
    {
        auto second = weft::publisher::open(region);  // another publisher of the region
        auto same_topic = second.register_topic("/prices/AAPL");
        CHECK(second.publish(same_topic, std::string_view("from the second")) == 150);
        CHECK(s.recv_for(1s)->str() == "from the second");
    }
    auto held_seq = pub.publish(prices, std::string_view("held"));
    auto held = s.recv();
    auto loan = pub.loan(prices);
    {
        auto moved = std::move(s);
        CHECK(!s);
    }  // the subscription closes here
    pub.close();
    std::memcpy(loan.data(), "late", 4);
    loan.set_len(4);
    CHECK(loan.publish() == held_seq + 1);
    CHECK(held.str() == "held");

    auto listed = weft::regions();
    bool found = false;
    for (auto &r : listed) found = found || r == region;
    CHECK(found);
    auto names = weft::topics(region);
    CHECK(names.size() == 5); // /prices/AAPL, /latest, /ticks, /price, /frames
    EXPECT_ERROR(WEFT_ERROR_NOT_FOUND, weft::subscriber::connect(name("absent")));
    EXPECT_ERROR(WEFT_ERROR_NOT_FOUND, sub.subscribe("/absent"));
    EXPECT_ERROR(WEFT_ERROR_NOT_FOUND, sub.subscribe_for("/absent", 10ms));
}

// Both ends of a one-to-one channel under `n`: the listening one (made on a thread of its
// own, as listen waits for its connector) and the connecting one.
static std::pair<weft::channel, weft::channel> paired(const std::string &n,
                                                      const weft_channel_options *opts = nullptr) {
    std::optional<weft::channel> listener;
    std::thread t([&] { listener.emplace(weft::channel::listen(n, 5s, opts)); });
    auto connector = weft::channel::connect(n, 5s, opts);
    t.join();
    return {std::move(*listener), std::move(connector)};
}

static void channels() {
    auto n = name("server");
    auto srv = weft::server::bind(n);
    CHECK(!srv.try_accept());
    CHECK(!srv.accept_for(10ms));
    std::thread client([&] {
        auto ch = weft::server::connect(n, 5s);
        for (std::uint64_t i = 0; i < 200; i++) {
            auto req = pattern(i * 13 % 2000, i);
            auto reply = ch.call(req);
            auto want = req;
            for (auto &b : want) b ^= 0xff;
            CHECK(same(reply.bytes(), want));
        }
        CHECK(!ch.call_for(std::string_view("unanswered"), 10ms));
    });
    auto conn = *srv.accept_for(5s);
    for (std::uint64_t i = 0; i < 200; i++) {
        auto req = (i % 2) ? conn.recv_request() : std::move(*conn.recv_request_for(5s));
        CHECK(same(req.bytes(), pattern(i * 13 % 2000, i)));
        std::vector<std::uint8_t> out(req.data(), req.data() + req.size());
        for (auto &b : out) b ^= 0xff;
        if (i % 3) {
            req.reply(out);
            EXPECT_ERROR(WEFT_ERROR_STATE, req.reply(out));  // answered already
            CHECK(req.data() == nullptr && req.size() == 0);
        } else {
            auto id = req.id();
            req = weft::request();  // released unanswered ...
            conn.reply_to(id, out);  // ... and answered by id
        }
    }
    client.join();
    {
        auto unanswered = conn.recv_request_for(1s);
        CHECK(unanswered && unanswered->str() == "unanswered");
    }  // released by its destructor
    {
        // A reply the C side refuses (no bytes behind a length) throws, and the request is
        // released all the same: the channel serves on.
        std::thread asker([&] {
            auto ch = weft::server::connect(n, 5s);
            CHECK(!ch.call_for(std::string_view("refused"), 10ms));
            CHECK(!ch.call_for(std::string_view("next"), 10ms));
        });
        auto conn2 = *srv.accept_for(5s);
        auto refused = conn2.recv_request_for(5s);
        CHECK(refused && refused->str() == "refused");
        EXPECT_ERROR(WEFT_ERROR_INVALID_ARGUMENT,
                     refused->reply(weft::bytes_view(static_cast<const std::uint8_t *>(nullptr), 5)));
        auto next = conn2.recv_request_for(5s);
        CHECK(next && next->str() == "next");
        asker.join();
    }
    conn.close();

    // One-to-one, raw records both ways.
    auto pair_name = name("pair");
    auto listener_and_connector = paired(pair_name);
    auto &listener = listener_and_connector.first;
    auto &connector = listener_and_connector.second;
    CHECK(connector.send_for(std::string_view("ping"), 1s));
    CHECK(listener.recv_for(1s)->str() == "ping");
    {
        // "For ever" as the longest duration there is waits (it once overflowed into 0 ms and
        // returned at once).
        std::thread later([&] {
            std::this_thread::sleep_for(50ms);
            CHECK(connector.send_for(std::string_view("later"), 1s));
        });
        auto got = listener.recv_for(std::chrono::hours::max());
        CHECK(got && got->str() == "later");
        later.join();
    }
    // A NaN duration waits not at all (`d <= zero` is `!(zero < d)`, true for NaN, so it
    // never reaches the conversion to an integer count, which would be undefined).
    CHECK(!listener.recv_for(std::chrono::duration<double>(std::nan(""))));
    CHECK(listener.try_send(std::string_view("pong")));
    CHECK(connector.recv().str() == "pong");
    CHECK(!connector.try_recv());
    CHECK(connector.max_message_len() > 1000);
    listener.close();
    EXPECT_ERROR(WEFT_ERROR_CLOSED, (void)connector.recv());
    EXPECT_ERROR(WEFT_ERROR_NOT_FOUND, weft::server::connect(name("absent"), 10ms));

    // Replies to a client that does not read them: the try_ and _for forms give false, and
    // a request is released either way (its id still takes a later reply).
    {
        weft_channel_options opts{};
        opts.capacity = 4096;  // two replies of 1500 bytes fill a stream
        auto unread = name("unread");
        auto srv_end_and_cli = paired(unread, &opts);
        auto &srv_end = srv_end_and_cli.first;
        auto &cli = srv_end_and_cli.second;
        for (int i = 0; i < 4; i++) CHECK(!cli.call_for(std::string(1, char('a' + i)), 0ms));
        std::vector<std::uint8_t> big(1500, 7);
        srv_end.recv_request_for(1s)->reply(big);  // room for it
        CHECK(srv_end.recv_request_for(1s)->try_reply(big));
        auto third = *srv_end.recv_request_for(1s);
        auto id3 = third.id();
        CHECK(!third.try_reply(big));
        EXPECT_ERROR(WEFT_ERROR_STATE, third.reply(big));  // consumed: released
        auto fourth = *srv_end.try_recv_request();       // so the channel lends nothing
        auto id4 = fourth.id();
        auto t0 = std::chrono::steady_clock::now();
        CHECK(!fourth.reply_for(big, 50ms));
        auto waited = std::chrono::steady_clock::now() - t0;
        CHECK(waited >= 50ms && waited < 4s);
        EXPECT_ERROR(WEFT_ERROR_STATE, fourth.reply(big));
        CHECK(!srv_end.try_reply_to(id3, big));
        t0 = std::chrono::steady_clock::now();
        CHECK(!srv_end.reply_to_for(id4, big, 50ms));
        waited = std::chrono::steady_clock::now() - t0;
        CHECK(waited >= 50ms && waited < 4s);
        for (int i = 0; i < 2; i++) CHECK(cli.recv_for(1s)->size() == 8 + 1500);
        CHECK(srv_end.reply_to_for(id3, big, 1s));
        CHECK(cli.recv_for(1s)->size() == 8 + 1500);
        CHECK(srv_end.try_reply_to(id4, big));
        CHECK(cli.recv_for(1s)->size() == 8 + 1500);
        CHECK(!cli.try_recv());
    }

    // Opening with a timeout throws, as opening does (only waits on an open handle give an
    // empty optional).
    EXPECT_ERROR(WEFT_ERROR_NOT_FOUND, weft::subscriber::connect_for(name("absent"), 10ms));
    EXPECT_ERROR(WEFT_ERROR_NOT_FOUND, weft::stream_reader::open_for(name("absent"), 10ms));
}

// Inputs at the edges of the wrapper's conversions: durations in odd periods, names with a
// NUL inside, containers whose accessors throw.
static void edges() {
    // 1/1024 s ticks: std::chrono::ceil multiplied by 125 before dividing by 128, which
    // overflowed int64 far below the saturation bound (1 ms instead of 4.5 million years).
    using ticks = std::chrono::duration<std::int64_t, std::ratio<1, 1024>>;
    CHECK(weft::detail::millis(ticks(147'573'952'589'676'413)) == 144'115'188'075'855'873ULL);
    using frames = std::chrono::duration<std::int64_t, std::ratio<1, 60>>;
    CHECK(weft::detail::millis(frames(200'000'000'000'000'000)) == 3'333'333'333'333'333'334ULL);
    // 147573952589676501 * 125 is 1 more than a multiple of 128: its ceiling is one above the
    // quotient, which a count converted through long double (rounded to even past 2^64) lost.
    CHECK(weft::detail::millis(ticks(147'573'952'589'676'501)) == 144'115'188'075'855'959ULL);
    CHECK(weft::detail::millis(std::chrono::duration<double>(0.0015)) == 2);
    CHECK(weft::detail::millis(std::chrono::nanoseconds(1'000'001)) == 2);
    CHECK(weft::detail::millis(std::chrono::seconds(3)) == 3000);
    CHECK(weft::detail::millis(ticks(1)) == 1);
    CHECK(weft::detail::millis(ticks(1024)) == 1000);
    CHECK(weft::detail::millis(ticks(-5)) == 0);
    {
        auto writer = weft::stream_writer::create(name("ticks"), 4096);
        auto reader = weft::stream_reader::open(name("ticks"));
        std::thread later([&] {
            std::this_thread::sleep_for(50ms);
            writer.write(std::string_view("x"));
        });
        auto rec = reader.read_for(ticks(147'573'952'589'676'413));
        later.join();
        CHECK(rec && rec->str() == "x"); // waited for the record instead of giving up at once
    }

    // A name with a NUL inside is another name, not the part before the NUL.
    const std::string base = name("nul");
    const std::string cut = base + std::string("\0-other", 7);
    auto w = weft::stream_writer::create(base, 4096);
    EXPECT_ERROR(WEFT_ERROR_INVALID_NAME, weft::stream_reader::open(cut));
    EXPECT_ERROR(WEFT_ERROR_INVALID_NAME, weft::stream_writer::create(cut, 4096));
    EXPECT_ERROR(WEFT_ERROR_INVALID_NAME, weft::publisher::create(cut));
    EXPECT_ERROR(WEFT_ERROR_INVALID_NAME, weft::subscriber::connect(cut));
    EXPECT_ERROR(WEFT_ERROR_INVALID_NAME, weft::topics(cut));
    {
        auto pub = weft::publisher::create(name("nul-region"));
        EXPECT_ERROR(WEFT_ERROR_INVALID_NAME, pub.register_topic(std::string("/a\0b", 4)));
    }

    // A sample's data() throws once the sample was moved from: a view of it throws too,
    // where a noexcept view ended the process (std::terminate).
    static_assert(!std::is_nothrow_constructible_v<weft::bytes_view, const weft::sample &>);
    static_assert(std::is_nothrow_constructible_v<weft::bytes_view, const std::string &>);
    auto pub = weft::publisher::create(name("fwd"));
    auto in = pub.register_topic("/in");
    auto out = pub.register_topic("/out");
    auto sub = weft::subscriber::connect(name("fwd"));
    auto s = sub.subscribe("/in");
    pub.publish(in, std::string_view("tick"));
    auto smp = s.recv();
    pub.publish(out, smp); // forwarding a sample as bytes
    auto kept = std::move(smp);
    EXPECT_ERROR(WEFT_ERROR_INVALID_ARGUMENT, pub.publish(out, smp));
    CHECK(weft::bytes_view(kept).str() == "tick");
}

// ---- : review additions -------------------------------------------------------------

// stream_grants: a write grant is exactly the room reserved, however it was reserved; a
// commit the C side refuses leaves the grant lent (its bytes still there, a later commit
// publishes them); abandon() gives the room back at once, unpublished; a grant's bytes seen
// as a bytes_view are the same bytes.
static void stream_grants() {
    auto n = name("x-grants");
    auto writer = weft::stream_writer::create(n, 1 << 16);
    auto reader = weft::stream_reader::open(n);
    EXPECT_ERROR(WEFT_ERROR_INVALID_ARGUMENT, reader.set_wait(77));  // the strategy reaches C
    reader.set_wait(WEFT_WAIT_PARK);
    {
        auto g = writer.reserve(100);
        CHECK(g.size() == 100 && g.bytes().size() == 100);
        weft::bytes_view view = g.bytes();
        CHECK(view.data() == g.data() && view.size() == 100);
        auto data = pattern(100, 7);
        std::memcpy(g.data(), data.data(), data.size());
        g.commit(g.size());  // the whole room
        CHECK(same(reader.read().bytes(), data));
    }
    {
        auto g = writer.try_reserve(50);
        CHECK(g && g->size() == 50);
        std::memcpy(g->data(), pattern(50, 8).data(), 50);
        g->commit(g->size());
        CHECK(same(reader.read().bytes(), pattern(50, 8)));
    }
    {
        auto g = writer.reserve_for(30, 1s);
        CHECK(g && g->size() == 30);
        std::memcpy(g->data(), pattern(30, 9).data(), 30);
        g->commit(g->size());
        CHECK(same(reader.read().bytes(), pattern(30, 9)));
    }
    {
        auto g = writer.reserve(4);
        std::memcpy(g.data(), "abcd", 4);
        EXPECT_ERROR(WEFT_ERROR_INVALID_ARGUMENT, g.commit(5));  // more than reserved
        CHECK(g.data() != nullptr && g.size() == 4);              // still lent
        CHECK(!reader.try_read());
        g.commit(4);
        CHECK(g.data() == nullptr);
        CHECK(reader.read().str() == "abcd");
    }
    {
        auto g = writer.reserve(4);
        std::memcpy(g.data(), "lost", 4);
        g.abandon();
        CHECK(g.data() == nullptr && g.size() == 0);
        writer.write(std::string_view("after"));  // nothing lent any more
        EXPECT_ERROR(WEFT_ERROR_STATE, g.commit(0));
    }
    CHECK(reader.read().str() == "after");
    CHECK(!reader.try_read());

    // Deferred records from the try_ and _for forms stay unseen until flushed too.
    CHECK(writer.try_write_deferred(std::string_view("t1")));
    CHECK(!reader.try_read());
    CHECK(writer.write_deferred_for(std::string_view("t2"), 1s));
    CHECK(!reader.try_read());
    writer.flush();
    CHECK(reader.read().str() == "t1");
    CHECK(reader.read().str() == "t2");

    // A closed and drained stream: the try_ and _for forms throw CLOSED (only EMPTY, FULL
    // and TIMEOUT give an empty optional).
    writer.write(std::string_view("last"));
    writer.close();
    {
        auto last = reader.try_read();
        CHECK(last && last->str() == "last");
    }
    EXPECT_ERROR(WEFT_ERROR_CLOSED, (void)reader.try_read());
    EXPECT_ERROR(WEFT_ERROR_CLOSED, (void)reader.read_for(1s));
}

// move_assign: assigning over an open handle closes what it held (the old writer's reader
// sees CLOSED), and the target then owns the moved handle.
static void move_assign() {
    auto a = name("x-move-a"), b = name("x-move-b");
    auto wa = weft::stream_writer::create(a, 4096);
    auto ra = weft::stream_reader::open(a);
    auto wb = weft::stream_writer::create(b, 4096);
    auto rb = weft::stream_reader::open(b);
    wa.write(std::string_view("a1"));
    wa = std::move(wb);
    CHECK(wa && !wb);
    CHECK(ra.read().str() == "a1");
    EXPECT_ERROR(WEFT_ERROR_CLOSED, (void)ra.read_for(1s));
    wa.write(std::string_view("b1"));
    CHECK(rb.read().str() == "b1");
}

// Runs `act` on a thread of its own 50 ms from now: the peer that acts while the calling
// thread waits in the call under test (the caller joins it).
template <typename F>
static std::thread in_a_moment(F act) {
    return std::thread([act] {
        std::this_thread::sleep_for(50ms);
        act();
    });
}

// waits: every _for form (and the opening calls with a timeout) waits for what comes
// during its timeout instead of giving up at once. Each event comes 50 ms after the wait
// started; the timeouts are generous upper bounds.
static void waits() {
    constexpr auto soon = 50ms;
    // stream_reader::open_for: the stream appears later.
    {
        auto n = name("x-open-for");
        std::optional<weft::stream_writer> w;
        std::thread t = in_a_moment([&] {
            w.emplace(weft::stream_writer::create(n, 4096));
        });
        auto r = weft::stream_reader::open_for(n, 5s);
        t.join();
        w->write(std::string_view("x"));
        CHECK(r.read().str() == "x");
    }
    // write_for and reserve_for: room comes later.
    {
        auto n = name("x-room");
        auto w = weft::stream_writer::create(n, 4096);
        auto r = weft::stream_reader::open(n);
        std::size_t filled = 0;
        while (w.try_write(std::string(500, 'f'))) filled++;
        CHECK(filled > 0);
        std::thread t = in_a_moment([&] {
            for (std::size_t i = 0; i < filled; i++) CHECK(r.read().size() == 500);
        });
        CHECK(w.write_for(std::string(500, 'g'), 5s));
        t.join();
        while (w.try_write(std::string(500, 'f'))) {
        }
        CHECK(!w.try_reserve(500));
        std::thread t2 = in_a_moment([&] {
            while (auto rec = r.read_for(200ms)) CHECK(rec->size() == 500);
        });
        auto g = w.reserve_for(500, 5s);
        CHECK(g && g->size() == 500);
        g.reset();  // abandoned
        t2.join();
    }
    // pub/sub: subscribe_for (the topic is registered later), recv_for and
    // recv_borrowed_for (the message is published later).
    {
        auto region = name("x-ps-waits");
        auto pub = weft::publisher::create(region);
        auto sub = weft::subscriber::connect(region);
        std::optional<weft::topic> later;
        std::thread t = in_a_moment([&] {
            later.emplace(pub.register_topic("/later"));
        });
        auto s = sub.subscribe_for("/later", 5s);
        t.join();
        CHECK(s);
        std::thread t2 = in_a_moment([&] {
            pub.publish(*later, std::string_view("copied"));
        });
        auto got = s.recv_for(5s);
        t2.join();
        CHECK(got && got->str() == "copied");
        std::thread t3 = in_a_moment([&] {
            pub.publish(*later, std::string_view("borrowed"));
        });
        auto b = s.recv_borrowed_for(5s);
        t3.join();
        CHECK(b && b->str() == "borrowed");
    }
    // channels: accept and accept_for (the client connects later), recv_request_for (the
    // request comes later), call_for (the reply comes later), send_for (room comes later).
    {
        auto n = name("x-srv-waits");
        weft_channel_options bad{};
        bad.slots = 300;  // outside 1 to 256: the options reach C
        EXPECT_ERROR(WEFT_ERROR_INVALID_ARGUMENT, weft::server::bind(n, &bad));
        auto srv = weft::server::bind(n);
        std::thread client = in_a_moment([&] {
            auto ch = weft::server::connect(n, 5s);
            std::this_thread::sleep_for(soon);
            auto reply = ch.call_for(std::string_view("question"), 5s);
            CHECK(reply && reply->str() == "answer");
        });
        auto conn = srv.accept();
        auto req = conn.recv_request_for(5s);
        CHECK(req && req->str() == "question");
        std::this_thread::sleep_for(soon);
        req->reply(std::string_view("answer"));
        client.join();

        std::thread client2 = in_a_moment([&] {
            auto ch = weft::server::connect(n, 5s);
            CHECK(ch.call(std::string_view("q2")).str() == "a2");
        });
        auto conn2 = srv.accept_for(5s);
        CHECK(conn2);
        conn2->recv_request_for(5s)->reply(std::string_view("a2"));
        client2.join();
    }
    {
        weft_channel_options opts{};
        opts.capacity = 4096;
        auto n = name("x-send-for");
        auto l_and_c = paired(n, &opts);
        auto &l = l_and_c.first;
        auto &c = l_and_c.second;
        std::size_t sent = 0;
        while (c.try_send(std::string(500, 's'))) sent++;  // try_send does not wait: it ends
        CHECK(sent > 0 && sent < 100);
        std::thread drain = in_a_moment([&] {
            for (std::size_t i = 0; i < sent; i++) CHECK(l.recv().size() == 500);
        });
        CHECK(c.send_for(std::string(500, 'z'), 5s));
        drain.join();
        CHECK(l.recv_for(1s)->size() == 500);
        // A closed peer: the try_ and _for forms throw CLOSED.
        c.close();
        EXPECT_ERROR(WEFT_ERROR_CLOSED, (void)l.try_recv());
        EXPECT_ERROR(WEFT_ERROR_CLOSED, (void)l.recv_for(1s));
    }
}

// pubsub_settings: history for a late subscriber; register_single with an inline mode and size;
// a loan's set_len refuses more than its capacity; a loan's bytes as a bytes_view.
static void pubsub_settings() {
    auto region = name("x-pubsub");
    auto pub = weft::publisher::create(region);
    auto sub = weft::subscriber::connect(region);
    auto hist = pub.register_topic("/hist");
    for (auto v : {"h1", "h2", "h3"}) pub.publish(hist, std::string_view(v));
    auto late = sub.subscribe("/hist", 2);
    auto h2 = late.try_recv();
    CHECK(h2 && h2->str() == "h2");
    auto h3 = late.try_recv();
    CHECK(h3 && h3->str() == "h3");
    CHECK(!late.try_recv());
    auto fresh = sub.subscribe("/hist");
    CHECK(!fresh.try_recv());

    auto single = pub.register_single("/single-inline", WEFT_TOPIC_INLINE, 8);
    auto si = sub.subscribe("/single-inline");
    EXPECT_ERROR(WEFT_ERROR_INVALID_ARGUMENT, pub.publish(single, std::string_view("short")));
    pub.publish(single, std::string_view("12345678"));
    auto inl = si.recv_for(1s);
    CHECK(inl && inl->str() == "12345678");

    auto loan = pub.loan(hist);
    weft::bytes_view view = loan.bytes();
    CHECK(view.data() == loan.data() && view.size() == loan.capacity() && view.size() > 0);
    EXPECT_ERROR(WEFT_ERROR_TOO_LARGE, loan.set_len(loan.capacity() + 1));
    std::memcpy(loan.data(), "ok", 2);
    loan.set_len(2);
    loan.publish();
    auto ok = fresh.recv_for(1s);
    CHECK(ok && ok->str() == "ok");
}

// request_consumed: try_reply and reply_for release the request whatever they return:
// its view is empty afterwards.
static void request_consumed() {
    auto n = name("x-consumed");
    auto srv_end_and_cli = paired(n);
    auto &srv_end = srv_end_and_cli.first;
    auto &cli = srv_end_and_cli.second;
    CHECK(!cli.call_for(std::string_view("r1"), 0ms));
    CHECK(!cli.call_for(std::string_view("r2"), 0ms));
    auto r1 = *srv_end.recv_request_for(1s);
    CHECK(r1.str() == "r1");
    CHECK(r1.try_reply(std::string_view("a1")));
    CHECK(r1.data() == nullptr && r1.size() == 0);
    auto r2 = *srv_end.recv_request_for(1s);
    CHECK(r2.str() == "r2");
    CHECK(r2.reply_for(std::string_view("a2"), 1s));
    CHECK(r2.data() == nullptr && r2.size() == 0);
    CHECK(cli.recv_for(1s)->size() == 8 + 2);
    CHECK(cli.recv_for(1s)->size() == 8 + 2);
}

// blocking: the calls without a timeout wait (for room, a record, a message, a request, a
// reply) instead of giving up at once. Each event comes 50 ms after the call started.
static void blocking() {
    constexpr auto soon = 50ms;
    {
        auto n = name("x-block-stream");
        auto w = weft::stream_writer::create(n, 4096);
        auto r = weft::stream_reader::open(n);
        std::thread later = in_a_moment([&] {
            w.write(std::string_view("late"));
        });
        CHECK(r.read().str() == "late");  // read waits for a record
        later.join();
        while (w.try_write(std::string(500, 'f'))) {
        }
        std::thread drain = in_a_moment([&] {
            for (int i = 0; i < 2; i++) CHECK(r.read().size() == 500);
        });
        w.write(std::string(500, 'w'));  // write waits for room
        drain.join();
        while (w.try_write(std::string(500, 'f'))) {
        }
        std::thread drain2 = in_a_moment([&] {
            while (auto rec = r.read_for(200ms)) CHECK(rec->size() == 500);
        });
        {
            auto g = w.reserve(500);  // reserve waits for room
            CHECK(g.size() == 500);
        }
        drain2.join();
    }
    {
        auto region = name("x-block-ps");
        auto pub = weft::publisher::create(region);
        auto t = pub.register_topic("/t");
        auto sub = weft::subscriber::connect(region);
        auto s = sub.subscribe("/t");
        std::thread later = in_a_moment([&] {
            pub.publish(t, std::string_view("one"));
        });
        CHECK(s.recv().str() == "one");  // recv waits for a message
        later.join();
        std::thread later2 = in_a_moment([&] {
            pub.publish(t, std::string_view("two"));
        });
        CHECK(s.recv_borrowed().str() == "two");  // so does recv_borrowed
        later2.join();
    }
    {
        weft_channel_options opts{};
        opts.capacity = 4096;  // two replies of 1500 bytes fill a stream
        auto n = name("x-block-ch");
        auto srv_end_and_cli = paired(n, &opts);
        auto &srv_end = srv_end_and_cli.first;
        auto &cli = srv_end_and_cli.second;
        std::thread later = in_a_moment([&] {
            cli.send(std::string_view("rec"));
        });
        CHECK(srv_end.recv().str() == "rec");  // recv waits for a record
        later.join();
        std::thread asker = in_a_moment([&] {
            for (int i = 0; i < 4; i++) CHECK(!cli.call_for(std::string(1, char('a' + i)), 0ms));
        });
        std::vector<std::uint8_t> big(1500, 7);
        auto first = srv_end.recv_request();  // recv_request waits for a request
        asker.join();  // every request sent before any reply (a call_for drops a late reply)
        CHECK(first.str() == "a");
        first.reply(big);
        CHECK(srv_end.recv_request_for(1s)->try_reply(big));  // the client's stream is full now
        // Reads what the client's stream holds, 50 ms later, until it stays empty.
        auto drain = [&] {
            std::this_thread::sleep_for(soon);
            while (auto m = cli.recv_for(500ms)) CHECK(m->size() == 1500 || m->size() == 8 + 1500);
        };
        auto third = *srv_end.recv_request_for(1s);
        std::thread reader(drain);
        third.reply(big);  // reply waits for room
        reader.join();
        auto id4 = srv_end.recv_request_for(1s)->id();  // released unanswered
        while (srv_end.try_send(big)) {
        }
        std::thread reader2(drain);
        srv_end.reply_to(id4, big);  // reply_to waits for room
        reader2.join();
        while (srv_end.try_send(big)) {
        }
        std::thread reader3(drain);
        srv_end.send(big);  // send waits for room
        reader3.join();
    }
}

int main() {
    alarm(120); // a wait that never ends fails the test instead of hanging it
    std::fprintf(stderr, "-- stream\n");
    stream();
    std::fprintf(stderr, "-- pubsub\n");
    pubsub();
    std::fprintf(stderr, "-- channels\n");
    channels();
    std::fprintf(stderr, "-- edges\n");
    edges();
    std::fprintf(stderr, "-- grants, moves, waits, settings, requests, blocking forms\n");
    stream_grants();
    move_assign();
    waits();
    pubsub_settings();
    request_consumed();
    blocking();
    std::fprintf(stderr, "cpp: %lu checks passed\n", checks);
    std::printf("ok cpp %lu\n", checks);
    return 0;
}
