// weft.hpp: a header-only C++17 wrapper over weft.h.
//
// Every class owns one handle of the C API and is move-only; destructors release what they
// own and never throw. Failures throw weft::error, which carries the status code and the
// library's message. The try_ and _for forms of the calls on an open handle (write, reserve,
// read, recv, send, call, reply, accept) return an empty std::optional (or false) where the
// C call says EMPTY, FULL or TIMEOUT; any other failure throws. The calls that open a handle
// throw on every failure, also those with a timeout: stream_reader::open_for (NOT_FOUND when
// the stream did not appear), subscriber::connect_for and subscriber::subscribe_for
// (TIMEOUT), channel::listen and channel::connect, server::connect.
//
// Lifetimes: a guard that a handle lends (write_grant, read_grant, message, request,
// borrowed_sample) must be destroyed before that handle, as an iterator before its
// container. A loan, a sample, a subscription and an accepted channel are independent of the
// object that made them.
//
// Thread-safety is that of the handles (see weft.h): a subscriber, a topic and a sample may
// be shared between threads; everything else may move between threads but is used by one
// thread at a time (a publisher together with its loans).
//
// Build: g++ -std=c++17 app.cpp -I crates/weft-ffi/include <the link line of weft.h>.
#ifndef WEFT_HPP
#define WEFT_HPP

#include "weft.h"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <ratio>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace weft {

// A failed call: the status code (a WEFT_ERROR_* value) and the library's message.
class error : public std::runtime_error {
  public:
    error(weft_status code, const std::string &message, std::uint64_t skipped = 0)
        : std::runtime_error(message), code_(code), skipped_(skipped) {}
    // The WEFT_ERROR_* code.
    weft_status code() const noexcept { return code_; }
    // The code's static description ("timed out").
    const char *code_string() const noexcept { return weft_error_string(code_); }
    // For WEFT_ERROR_LAGGED: exactly how many messages were overwritten unread.
    std::uint64_t skipped() const noexcept { return skipped_; }

  private:
    weft_status code_;
    std::uint64_t skipped_;
};

// A read-only view of bytes in shared memory (std::span<const std::byte> in C++20).
class bytes_view {
  public:
    bytes_view() noexcept = default;
    bytes_view(const std::uint8_t *data, std::size_t size) noexcept : data_(data), size_(size) {}
    bytes_view(const void *data, std::size_t size) noexcept
        : data_(static_cast<const std::uint8_t *>(data)), size_(size) {}
    bytes_view(std::string_view s) noexcept
        : data_(reinterpret_cast<const std::uint8_t *>(s.data())), size_(s.size()) {}
    template <typename Container,
              typename = decltype(std::declval<const Container &>().data()),
              typename = decltype(std::declval<const Container &>().size()),
              typename = std::enable_if_t<sizeof(*std::declval<const Container &>().data()) == 1>>
    bytes_view(const Container &c) noexcept(noexcept(c.data()) && noexcept(c.size()))
        : data_(reinterpret_cast<const std::uint8_t *>(c.data())), size_(c.size()) {}

    const std::uint8_t *data() const noexcept { return data_; }
    std::size_t size() const noexcept { return size_; }
    bool empty() const noexcept { return size_ == 0; }
    const std::uint8_t *begin() const noexcept { return data_; }
    const std::uint8_t *end() const noexcept { return data_ + size_; }
    std::uint8_t operator[](std::size_t i) const noexcept { return data_[i]; }
    // The bytes as characters (no copy).
    std::string_view str() const noexcept {
        return {reinterpret_cast<const char *>(data_), size_};
    }

  private:
    const std::uint8_t *data_ = nullptr;
    std::size_t size_ = 0;
};

// A writable view of bytes in shared memory.
class mutable_bytes {
  public:
    mutable_bytes() noexcept = default;
    mutable_bytes(std::uint8_t *data, std::size_t size) noexcept : data_(data), size_(size) {}
    std::uint8_t *data() const noexcept { return data_; }
    std::size_t size() const noexcept { return size_; }
    std::uint8_t *begin() const noexcept { return data_; }
    std::uint8_t *end() const noexcept { return data_ + size_; }
    std::uint8_t &operator[](std::size_t i) const noexcept { return data_[i]; }
    operator bytes_view() const noexcept { return {data_, size_}; }

  private:
    std::uint8_t *data_ = nullptr;
    std::size_t size_ = 0;
};

namespace detail {

[[noreturn]] inline void raise(weft_status rc) {
    throw error(rc, weft_last_error_message(),
                rc == WEFT_ERROR_LAGGED ? weft_last_error_skipped() : 0);
}

inline void check(weft_status rc) {
    if (rc != WEFT_OK) raise(rc);
}

// true for OK, false for the "nothing now" codes (EMPTY, FULL, TIMEOUT); throws otherwise.
inline bool soft(weft_status rc) {
    if (rc == WEFT_OK) return true;
    if (rc == WEFT_ERROR_EMPTY || rc == WEFT_ERROR_FULL || rc == WEFT_ERROR_TIMEOUT) return false;
    raise(rc);
}

// `d` in whole milliseconds, rounded up; 0 for a negative `d`. A duration too long for
// milliseconds (`std::chrono::hours::max()` meaning "for ever") saturates to UINT64_MAX
// milliseconds (584 million years) instead of overflowing in the conversion. Not through
// `std::chrono::ceil`, which multiplies before it divides for periods such as 1/1024 s and
// overflows below that bound: an integer count is divided first, exactly (the `long double`
// count rounds once past 2^64 and could round down); a floating count is rounded from its
// `long double` value.
template <typename Rep, typename Period>
std::uint64_t millis(std::chrono::duration<Rep, Period> d) {
    if (d <= d.zero()) return 0;
    const auto as_ms = std::chrono::duration<long double, std::milli>(d).count();
    if (!(as_ms < static_cast<long double>(std::numeric_limits<std::int64_t>::max() / 2)))
        return std::numeric_limits<std::uint64_t>::max();
    using per_ms = std::ratio_divide<Period, std::milli>;
    constexpr auto num = static_cast<std::uint64_t>(per_ms::num);
    constexpr auto den = static_cast<std::uint64_t>(per_ms::den);
    constexpr bool exact = num <= std::numeric_limits<std::uint64_t>::max() / den;
    if constexpr (std::is_integral_v<Rep> && exact) {
        // count * num / den rounded up, as (q * den + r) * num / den: q * num is at most the
        // result (below 2^62 by the check above), r * num below den * num.
        const auto count = static_cast<std::uint64_t>(d.count());
        const std::uint64_t q = count / den, r = count % den;
        return q * num + (r * num + den - 1) / den;
    } else {
        const auto whole = static_cast<std::uint64_t>(as_ms);
        return whole + (static_cast<long double>(whole) < as_ms ? 1 : 0);
    }
}

// `name` for a C call, which reads up to the first NUL: a name holding one would reach C cut
// short and name another object, so it is refused.
inline const char *c_name(const std::string &name) {
    if (name.find('\0') != std::string::npos)
        throw error(WEFT_ERROR_INVALID_NAME, "a name cannot hold a NUL byte");
    return name.c_str();
}

// Unique ownership of one C handle, released by `Close` (which sets the pointer to NULL).
template <typename T, weft_status (*Close)(T **)>
class owned {
  public:
    owned() noexcept = default;
    explicit owned(T *h) noexcept : h_(h) {}
    owned(owned &&o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
    owned &operator=(owned &&o) noexcept {
        if (this != &o) {
            reset();
            h_ = std::exchange(o.h_, nullptr);
        }
        return *this;
    }
    owned(const owned &) = delete;
    owned &operator=(const owned &) = delete;
    ~owned() { reset(); }

    void reset() noexcept {
        if (h_) (void)Close(&h_);
    }
    T *get() const noexcept { return h_; }
    T *release() noexcept { return std::exchange(h_, nullptr); }
    explicit operator bool() const noexcept { return h_ != nullptr; }

  private:
    T *h_ = nullptr;
};

// A grant lent by a handle: `Release` gives it back, unless it was consumed.
template <typename T, weft_status (*Release)(T *)>
class lent {
  public:
    lent() noexcept = default;
    explicit lent(T *owner) noexcept : owner_(owner) {}
    lent(lent &&o) noexcept : owner_(std::exchange(o.owner_, nullptr)) {}
    lent &operator=(lent &&o) noexcept {
        if (this != &o) {
            reset();
            owner_ = std::exchange(o.owner_, nullptr);
        }
        return *this;
    }
    lent(const lent &) = delete;
    lent &operator=(const lent &) = delete;
    ~lent() { reset(); }

    void reset() noexcept {
        if (owner_) (void)Release(std::exchange(owner_, nullptr));
    }
    // The owner, for a call that consumes the grant; the destructor then does nothing.
    T *consume() {
        if (!owner_) throw error(WEFT_ERROR_STATE, "the grant was consumed or released already");
        return std::exchange(owner_, nullptr);
    }
    T *owner() const noexcept { return owner_; }

  private:
    T *owner_ = nullptr;
};

// Bytes lent by a handle and read in place (a stream record, a channel message or request);
// released by the destructor or release(). The lending handle's class makes them. Once
// released, consumed or moved from, they are empty (a null data()): never a view of memory
// the lender has taken back.
template <typename T, weft_status (*Release)(T *)>
class lent_bytes {
  public:
    lent_bytes() noexcept = default;
    bytes_view bytes() const noexcept { return grant_.owner() ? bytes_ : bytes_view(); }
    const std::uint8_t *data() const noexcept { return bytes().data(); }
    std::size_t size() const noexcept { return bytes().size(); }
    std::string_view str() const noexcept { return bytes().str(); }
    void release() noexcept { grant_.reset(); }

  protected:
    lent_bytes(T *owner, const std::uint8_t *data, std::size_t size) noexcept
        : grant_(owner), bytes_(data, size) {}
    lent<T, Release> grant_;
    bytes_view bytes_;
};

}  // namespace detail

// ---- byte stream -------------------------------------------------------------------------

// Room reserved in a stream, written in place; commit() publishes it, the destructor
// abandons it. Must not outlive its writer. Once committed, abandoned or moved from, it is
// empty (a null data()).
class write_grant {
  public:
    write_grant() noexcept = default;
    mutable_bytes bytes() const noexcept { return grant_.owner() ? bytes_ : mutable_bytes(); }
    std::uint8_t *data() const noexcept { return bytes().data(); }
    std::size_t size() const noexcept { return bytes().size(); }
    // Publishes the first len bytes as one record.
    void commit(std::size_t len) {
        weft_stream_writer_t *w = grant_.owner();
        if (!w) throw error(WEFT_ERROR_STATE, "the grant was committed or abandoned already");
        detail::check(weft_stream_writer_commit(w, len));  // on error the grant stays lent
        (void)grant_.consume();
    }
    // Gives the room back unwritten.
    void abandon() noexcept { grant_.reset(); }

  private:
    friend class stream_writer;
    write_grant(weft_stream_writer_t *w, std::uint8_t *data, std::size_t size) noexcept
        : grant_(w), bytes_(data, size) {}
    detail::lent<weft_stream_writer_t, weft_stream_writer_abandon> grant_;
    mutable_bytes bytes_;
};

// The writing end of a stream.
class stream_writer {
  public:
    static stream_writer create(const std::string &name, std::size_t capacity,
                                const weft_stream_options *opts = nullptr) {
        weft_stream_writer_t *h = nullptr;
        detail::check(weft_stream_writer_create(detail::c_name(name), capacity, opts, &h));
        return stream_writer(h);
    }
    void write(bytes_view data) {
        detail::check(weft_stream_writer_write(h_.get(), data.data(), data.size()));
    }
    // false when the stream is full.
    bool try_write(bytes_view data) {
        return detail::soft(weft_stream_writer_try_write(h_.get(), data.data(), data.size()));
    }
    // false when the stream stayed full for `timeout`.
    template <typename Rep, typename Period>
    bool write_for(bytes_view data, std::chrono::duration<Rep, Period> timeout) {
        return detail::soft(weft_stream_writer_write_timeout(h_.get(), data.data(), data.size(),
                                                             detail::millis(timeout)));
    }
    // Copies a record in, published later: by flush(), any other write or commit, the
    // deferred limit, a wait for room, or close.
    void write_deferred(bytes_view data) {
        detail::check(weft_stream_writer_write_deferred(h_.get(), data.data(), data.size()));
    }
    // false when the stream is full (what was deferred before is published).
    bool try_write_deferred(bytes_view data) {
        return detail::soft(
            weft_stream_writer_try_write_deferred(h_.get(), data.data(), data.size()));
    }
    // false when the stream stayed full for `timeout`.
    template <typename Rep, typename Period>
    bool write_deferred_for(bytes_view data, std::chrono::duration<Rep, Period> timeout) {
        return detail::soft(weft_stream_writer_write_deferred_timeout(
            h_.get(), data.data(), data.size(), detail::millis(timeout)));
    }
    // Publishes every deferred record.
    void flush() { detail::check(weft_stream_writer_flush(h_.get())); }
    write_grant reserve(std::size_t len) {
        std::uint8_t *p = nullptr;
        detail::check(weft_stream_writer_reserve(h_.get(), len, &p));
        return write_grant(h_.get(), p, len);
    }
    std::optional<write_grant> try_reserve(std::size_t len) {
        std::uint8_t *p = nullptr;
        if (!detail::soft(weft_stream_writer_try_reserve(h_.get(), len, &p))) return std::nullopt;
        return write_grant(h_.get(), p, len);
    }
    template <typename Rep, typename Period>
    std::optional<write_grant> reserve_for(std::size_t len,
                                           std::chrono::duration<Rep, Period> timeout) {
        std::uint8_t *p = nullptr;
        if (!detail::soft(weft_stream_writer_reserve_timeout(h_.get(), len,
                                                             detail::millis(timeout), &p)))
            return std::nullopt;
        return write_grant(h_.get(), p, len);
    }
    std::size_t max_record_len() const {
        std::size_t n = 0;
        detail::check(weft_stream_writer_max_record_len(h_.get(), &n));
        return n;
    }
    void set_wait(std::int32_t strategy) {
        detail::check(weft_stream_writer_set_wait(h_.get(), strategy));
    }
    // Closes now (the destructor does it otherwise): the reader drains, then sees CLOSED.
    void close() noexcept { h_.reset(); }
    explicit operator bool() const noexcept { return bool(h_); }
    weft_stream_writer_t *handle() const noexcept { return h_.get(); }

  private:
    explicit stream_writer(weft_stream_writer_t *h) noexcept : h_(h) {}
    detail::owned<weft_stream_writer_t, weft_stream_writer_close> h_;
};

// A record borrowed in place from a stream; released by the destructor. Must not outlive
// its reader.
class read_grant : public detail::lent_bytes<weft_stream_reader_t, weft_stream_reader_release> {
  public:
    read_grant() noexcept = default;

  private:
    friend class stream_reader;
    read_grant(weft_stream_reader_t *r, const std::uint8_t *data, std::size_t size) noexcept
        : lent_bytes(r, data, size) {}
};

// The reading end of a stream.
class stream_reader {
  public:
    static stream_reader open(const std::string &name) {
        weft_stream_reader_t *h = nullptr;
        detail::check(weft_stream_reader_open(detail::c_name(name), &h));
        return stream_reader(h);
    }
    // Waits up to `timeout` for the stream to appear; throws error(WEFT_ERROR_NOT_FOUND) if
    // it does not (an opening call: no optional).
    template <typename Rep, typename Period>
    static stream_reader open_for(const std::string &name,
                                  std::chrono::duration<Rep, Period> timeout) {
        weft_stream_reader_t *h = nullptr;
        detail::check(
            weft_stream_reader_open_timeout(detail::c_name(name), detail::millis(timeout), &h));
        return stream_reader(h);
    }
    // Waits for the next record. Throws error(WEFT_ERROR_CLOSED) once the writer closed
    // and everything was read.
    read_grant read() {
        const std::uint8_t *p = nullptr;
        std::size_t n = 0;
        detail::check(weft_stream_reader_read(h_.get(), &p, &n));
        return read_grant(h_.get(), p, n);
    }
    std::optional<read_grant> try_read() {
        const std::uint8_t *p = nullptr;
        std::size_t n = 0;
        if (!detail::soft(weft_stream_reader_try_read(h_.get(), &p, &n))) return std::nullopt;
        return read_grant(h_.get(), p, n);
    }
    template <typename Rep, typename Period>
    std::optional<read_grant> read_for(std::chrono::duration<Rep, Period> timeout) {
        const std::uint8_t *p = nullptr;
        std::size_t n = 0;
        if (!detail::soft(
                weft_stream_reader_read_timeout(h_.get(), detail::millis(timeout), &p, &n)))
            return std::nullopt;
        return read_grant(h_.get(), p, n);
    }
    void set_wait(std::int32_t strategy) {
        detail::check(weft_stream_reader_set_wait(h_.get(), strategy));
    }
    void close() noexcept { h_.reset(); }
    explicit operator bool() const noexcept { return bool(h_); }
    weft_stream_reader_t *handle() const noexcept { return h_.get(); }

  private:
    explicit stream_reader(weft_stream_reader_t *h) noexcept : h_(h) {}
    detail::owned<weft_stream_reader_t, weft_stream_reader_close> h_;
};

// ---- pub/sub -----------------------------------------------------------------------------

// A registered topic.
class topic {
  public:
    std::string_view name() const {
        const char *n = nullptr;
        detail::check(weft_topic_name(h_.get(), &n));
        return n;
    }
    weft_topic_t *handle() const noexcept { return h_.get(); }

  private:
    friend class publisher;
    explicit topic(weft_topic_t *h) noexcept : h_(h) {}
    detail::owned<weft_topic_t, weft_topic_free> h_;
};

// A block loaned from the pool: write it, set_len, publish. The destructor gives an
// unpublished block back. It keeps its publisher alive, so it may outlive the publisher
// object (but is used on the publisher's thread). Once published or moved from, it is empty
// (a null data(), capacity 0): the block is the subscribers' then.
class loan {
  public:
    mutable_bytes bytes() const noexcept {
        return h_ ? mutable_bytes(data_, capacity_) : mutable_bytes();
    }
    std::uint8_t *data() const noexcept { return bytes().data(); }
    std::size_t capacity() const noexcept { return bytes().size(); }
    void set_len(std::size_t len) { detail::check(weft_loan_set_len(h_.get(), len)); }
    // Publishes the loan (consumed either way); returns the message's sequence number.
    std::uint64_t publish() {
        if (!h_) throw error(WEFT_ERROR_STATE, "the loan was published or released already");
        weft_loan_t *h = h_.release();
        std::uint64_t seq = 0;
        detail::check(weft_loan_publish(&h, &seq));
        return seq;
    }
    explicit operator bool() const noexcept { return bool(h_); }

  private:
    friend class publisher;
    loan(weft_loan_t *h, std::uint8_t *data, std::size_t capacity) noexcept
        : h_(h), data_(data), capacity_(capacity) {}
    detail::owned<weft_loan_t, weft_loan_release> h_;
    std::uint8_t *data_;
    std::size_t capacity_;
};

// A publisher of one region.
class publisher {
  public:
    static publisher create(const std::string &region, const weft_pubsub_config *cfg = nullptr) {
        weft_publisher_t *h = nullptr;
        detail::check(weft_publisher_create(detail::c_name(region), cfg, &h));
        return publisher(h);
    }
    static publisher open(const std::string &region, const weft_pubsub_config *cfg = nullptr) {
        weft_publisher_t *h = nullptr;
        detail::check(weft_publisher_open(detail::c_name(region), cfg, &h));
        return publisher(h);
    }
    weft::topic register_topic(const std::string &name, std::int32_t mode = WEFT_TOPIC_BLOCKS) {
        weft_topic_t *t = nullptr;
        detail::check(weft_publisher_register_with(h_.get(), detail::c_name(name), mode, &t));
        return weft::topic(t);
    }
    // Registers an inline topic of `size`-byte messages (1 to 56).
    weft::topic register_inline(const std::string &name, std::size_t size) {
        weft_topic_t *t = nullptr;
        detail::check(weft_publisher_register_inline(h_.get(), detail::c_name(name), size, &t));
        return weft::topic(t);
    }
    // Registers a latest-value inline topic: every receive gets the newest message.
    weft::topic register_inline_latest(const std::string &name, std::size_t size) {
        weft_topic_t *t = nullptr;
        detail::check(
            weft_publisher_register_inline_latest(h_.get(), detail::c_name(name), size, &t));
        return weft::topic(t);
    }
    // Registers a single-publisher topic of `mode` (`size`: an inline topic's message size, 0
    // for the other modes): one live publisher at a time; another gets WEFT_ERROR_IN_USE.
    weft::topic register_single(const std::string &name, std::int32_t mode = WEFT_TOPIC_BLOCKS,
                                std::size_t size = 0) {
        weft_topic_t *t = nullptr;
        detail::check(
            weft_publisher_register_single(h_.get(), detail::c_name(name), mode, size, &t));
        return weft::topic(t);
    }
    weft::loan loan(const weft::topic &t) {
        weft_loan_t *l = nullptr;
        std::uint8_t *p = nullptr;
        std::size_t cap = 0;
        detail::check(weft_publisher_loan(h_.get(), t.handle(), &l, &p, &cap));
        return weft::loan(l, p, cap);
    }
    // Copies `data` into a block and publishes it; returns the sequence number.
    std::uint64_t publish(const weft::topic &t, bytes_view data) {
        std::uint64_t seq = 0;
        detail::check(weft_publisher_publish(h_.get(), t.handle(), data.data(), data.size(), &seq));
        return seq;
    }
    std::size_t max_len() const {
        std::size_t n = 0;
        detail::check(weft_publisher_max_len(h_.get(), &n));
        return n;
    }
    void close() noexcept { h_.reset(); }
    explicit operator bool() const noexcept { return bool(h_); }
    weft_publisher_t *handle() const noexcept { return h_.get(); }

  private:
    explicit publisher(weft_publisher_t *h) noexcept : h_(h) {}
    detail::owned<weft_publisher_t, weft_publisher_close> h_;
};

// A received message, borrowed in place; the destructor releases its block.
class sample {
  public:
    bytes_view bytes() const {
        const std::uint8_t *p = nullptr;
        std::size_t n = 0;
        detail::check(weft_sample_data(h_.get(), &p, &n));
        return {p, n};
    }
    const std::uint8_t *data() const { return bytes().data(); }
    std::size_t size() const { return bytes().size(); }
    std::string_view str() const { return bytes().str(); }
    std::uint64_t seq() const {
        std::uint64_t s = 0;
        detail::check(weft_sample_seq(h_.get(), &s));
        return s;
    }
    explicit operator bool() const noexcept { return bool(h_); }

  private:
    friend class subscription;
    explicit sample(weft_sample_t *h) noexcept : h_(h) {}
    detail::owned<weft_sample_t, weft_sample_release> h_;
};

// A received message lent in place by its subscription (the cheapest receive: nothing is
// allocated); released by the destructor or release(). One at a time per subscription;
// must not outlive it.
class borrowed_sample
    : public detail::lent_bytes<weft_subscription_t, weft_subscription_release> {
  public:
    borrowed_sample() noexcept = default;
    std::uint64_t seq() const noexcept { return seq_; }

  private:
    friend class subscription;
    borrowed_sample(weft_subscription_t *s, const std::uint8_t *data, std::size_t size,
                    std::uint64_t seq) noexcept
        : lent_bytes(s, data, size), seq_(seq) {}
    std::uint64_t seq_ = 0;
};

// One topic's messages for one subscriber. A receive that lagged throws
// error(WEFT_ERROR_LAGGED) with skipped(); the next receive goes on.
class subscription {
  public:
    // The next message, lent in place until the borrowed_sample is released (any receive
    // before that throws error(WEFT_ERROR_STATE)).
    std::optional<borrowed_sample> try_recv_borrowed() {
        const std::uint8_t *p = nullptr;
        std::size_t n = 0;
        std::uint64_t seq = 0;
        if (!detail::soft(weft_subscription_try_recv_borrowed(h_.get(), &p, &n, &seq)))
            return std::nullopt;
        return borrowed_sample(h_.get(), p, n, seq);
    }
    borrowed_sample recv_borrowed() {
        const std::uint8_t *p = nullptr;
        std::size_t n = 0;
        std::uint64_t seq = 0;
        detail::check(weft_subscription_recv_borrowed(h_.get(), &p, &n, &seq));
        return borrowed_sample(h_.get(), p, n, seq);
    }
    template <typename Rep, typename Period>
    std::optional<borrowed_sample> recv_borrowed_for(std::chrono::duration<Rep, Period> timeout) {
        const std::uint8_t *p = nullptr;
        std::size_t n = 0;
        std::uint64_t seq = 0;
        if (!detail::soft(weft_subscription_recv_borrowed_timeout(
                h_.get(), detail::millis(timeout), &p, &n, &seq)))
            return std::nullopt;
        return borrowed_sample(h_.get(), p, n, seq);
    }
    std::optional<sample> try_recv() {
        weft_sample_t *s = nullptr;
        if (!detail::soft(weft_subscription_try_recv(h_.get(), &s))) return std::nullopt;
        return sample(s);
    }
    sample recv() {
        weft_sample_t *s = nullptr;
        detail::check(weft_subscription_recv(h_.get(), &s));
        return sample(s);
    }
    template <typename Rep, typename Period>
    std::optional<sample> recv_for(std::chrono::duration<Rep, Period> timeout) {
        weft_sample_t *s = nullptr;
        if (!detail::soft(weft_subscription_recv_timeout(h_.get(), detail::millis(timeout), &s)))
            return std::nullopt;
        return sample(s);
    }
    explicit operator bool() const noexcept { return bool(h_); }

  private:
    friend class subscriber;
    explicit subscription(weft_subscription_t *h) noexcept : h_(h) {}
    detail::owned<weft_subscription_t, weft_subscription_close> h_;
};

// A subscriber of one region.
class subscriber {
  public:
    static subscriber connect(const std::string &region,
                              const weft_pubsub_config *cfg = nullptr) {
        weft_subscriber_t *h = nullptr;
        detail::check(weft_subscriber_connect(detail::c_name(region), cfg, &h));
        return subscriber(h);
    }
    // Waits up to `timeout` for the region to appear; throws error(WEFT_ERROR_NOT_FOUND) if it
    // does not (an opening call: no optional).
    template <typename Rep, typename Period>
    static subscriber connect_for(const std::string &region,
                                  std::chrono::duration<Rep, Period> timeout) {
        weft_subscriber_t *h = nullptr;
        detail::check(
            weft_subscriber_connect_timeout(detail::c_name(region), detail::millis(timeout), &h));
        return subscriber(h);
    }
    weft::subscription subscribe(const std::string &topic, std::size_t history = 0) const {
        weft_subscription_t *s = nullptr;
        detail::check(
            weft_subscriber_subscribe_with_history(h_.get(), detail::c_name(topic), history, &s));
        return weft::subscription(s);
    }
    // Waits up to `timeout` for a publisher to register `topic`; throws
    // error(WEFT_ERROR_NOT_FOUND) if none does (an opening call: no optional).
    template <typename Rep, typename Period>
    weft::subscription subscribe_for(const std::string &topic,
                                     std::chrono::duration<Rep, Period> timeout) const {
        weft_subscription_t *s = nullptr;
        detail::check(weft_subscriber_subscribe_timeout(h_.get(), detail::c_name(topic),
                                                        detail::millis(timeout), &s));
        return weft::subscription(s);
    }
    void close() noexcept { h_.reset(); }
    explicit operator bool() const noexcept { return bool(h_); }

  private:
    explicit subscriber(weft_subscriber_t *h) noexcept : h_(h) {}
    detail::owned<weft_subscriber_t, weft_subscriber_close> h_;
};

namespace detail {
inline std::vector<std::string> names(weft_name_list_t *raw) {
    owned<weft_name_list_t, weft_name_list_free> list(raw);
    std::size_t n = 0;
    check(weft_name_list_len(list.get(), &n));
    std::vector<std::string> out;
    out.reserve(n);
    for (std::size_t i = 0; i < n; i++) {
        const char *s = nullptr;
        check(weft_name_list_get(list.get(), i, &s));
        out.emplace_back(s);
    }
    return out;
}
}  // namespace detail

// The pub/sub regions on this machine.
inline std::vector<std::string> regions() {
    weft_name_list_t *l = nullptr;
    detail::check(weft_pubsub_regions(&l));
    return detail::names(l);
}

// The registered topics of a region.
inline std::vector<std::string> topics(const std::string &region) {
    weft_name_list_t *l = nullptr;
    detail::check(weft_pubsub_topics(detail::c_name(region), &l));
    return detail::names(l);
}

// ---- request/response --------------------------------------------------------------------

// A record or a reply lent by a channel; released by the destructor. Must not outlive its
// channel.
class message : public detail::lent_bytes<weft_channel_t, weft_channel_release> {
  public:
    message() noexcept = default;

  private:
    friend class channel;
    message(weft_channel_t *c, const std::uint8_t *p, std::size_t n) noexcept
        : lent_bytes(c, p, n) {}
};

// A request lent by a channel: reply() answers and releases it; the destructor releases it
// unanswered. Must not outlive its channel.
class request : public detail::lent_bytes<weft_channel_t, weft_channel_release> {
  public:
    request() noexcept = default;
    std::uint64_t id() const noexcept { return id_; }
    // Answers, waiting for room, and releases the request (also when it throws).
    void reply(bytes_view data) {
        detail::check(weft_channel_reply(grant_.consume(), data.data(), data.size()));
    }
    // false when the channel is full. The request is released either way: keep id() to
    // answer later with channel::reply_to.
    bool try_reply(bytes_view data) {
        return detail::soft(weft_channel_try_reply(grant_.consume(), data.data(), data.size()));
    }
    // false when the channel stayed full for `timeout`. Released either way, as try_reply.
    template <typename Rep, typename Period>
    bool reply_for(bytes_view data, std::chrono::duration<Rep, Period> timeout) {
        return detail::soft(weft_channel_reply_timeout(grant_.consume(), data.data(), data.size(),
                                                       detail::millis(timeout)));
    }

  private:
    friend class channel;
    request(weft_channel_t *c, const std::uint8_t *p, std::size_t n, std::uint64_t id) noexcept
        : lent_bytes(c, p, n), id_(id) {}
    std::uint64_t id_ = 0;
};

// One end of a request/response channel.
class channel {
  public:
    template <typename Rep, typename Period>
    static channel listen(const std::string &name, std::chrono::duration<Rep, Period> timeout,
                          const weft_channel_options *opts = nullptr) {
        weft_channel_t *h = nullptr;
        detail::check(weft_channel_listen(detail::c_name(name), detail::millis(timeout), opts, &h));
        return channel(h);
    }
    template <typename Rep, typename Period>
    static channel connect(const std::string &name, std::chrono::duration<Rep, Period> timeout,
                           const weft_channel_options *opts = nullptr) {
        weft_channel_t *h = nullptr;
        detail::check(
            weft_channel_connect(detail::c_name(name), detail::millis(timeout), opts, &h));
        return channel(h);
    }
    void send(bytes_view data) {
        detail::check(weft_channel_send(h_.get(), data.data(), data.size()));
    }
    bool try_send(bytes_view data) {
        return detail::soft(weft_channel_try_send(h_.get(), data.data(), data.size()));
    }
    template <typename Rep, typename Period>
    bool send_for(bytes_view data, std::chrono::duration<Rep, Period> timeout) {
        return detail::soft(weft_channel_send_timeout(h_.get(), data.data(), data.size(),
                                                      detail::millis(timeout)));
    }
    message recv() {
        const std::uint8_t *p = nullptr;
        std::size_t n = 0;
        detail::check(weft_channel_recv(h_.get(), &p, &n));
        return message(h_.get(), p, n);
    }
    std::optional<message> try_recv() {
        const std::uint8_t *p = nullptr;
        std::size_t n = 0;
        if (!detail::soft(weft_channel_try_recv(h_.get(), &p, &n))) return std::nullopt;
        return message(h_.get(), p, n);
    }
    template <typename Rep, typename Period>
    std::optional<message> recv_for(std::chrono::duration<Rep, Period> timeout) {
        const std::uint8_t *p = nullptr;
        std::size_t n = 0;
        if (!detail::soft(weft_channel_recv_timeout(h_.get(), detail::millis(timeout), &p, &n)))
            return std::nullopt;
        return message(h_.get(), p, n);
    }
    // Sends a request and waits for its reply.
    message call(bytes_view req) {
        const std::uint8_t *p = nullptr;
        std::size_t n = 0;
        detail::check(weft_channel_call(h_.get(), req.data(), req.size(), &p, &n));
        return message(h_.get(), p, n);
    }
    // As call(), empty if no reply came within `timeout`. The request is forgotten then: its
    // late reply is dropped by the later call or call_for on this channel that reads it (a
    // recv() would return it as a record, so do not mix recv() with calls on one channel).
    template <typename Rep, typename Period>
    std::optional<message> call_for(bytes_view req, std::chrono::duration<Rep, Period> timeout) {
        const std::uint8_t *p = nullptr;
        std::size_t n = 0;
        if (!detail::soft(weft_channel_call_timeout(h_.get(), req.data(), req.size(),
                                                    detail::millis(timeout), &p, &n)))
            return std::nullopt;
        return message(h_.get(), p, n);
    }
    weft::request recv_request() {
        const std::uint8_t *p = nullptr;
        std::size_t n = 0;
        std::uint64_t id = 0;
        detail::check(weft_channel_recv_request(h_.get(), &p, &n, &id));
        return weft::request(h_.get(), p, n, id);
    }
    std::optional<weft::request> try_recv_request() {
        const std::uint8_t *p = nullptr;
        std::size_t n = 0;
        std::uint64_t id = 0;
        if (!detail::soft(weft_channel_try_recv_request(h_.get(), &p, &n, &id)))
            return std::nullopt;
        return weft::request(h_.get(), p, n, id);
    }
    template <typename Rep, typename Period>
    std::optional<weft::request> recv_request_for(std::chrono::duration<Rep, Period> timeout) {
        const std::uint8_t *p = nullptr;
        std::size_t n = 0;
        std::uint64_t id = 0;
        if (!detail::soft(weft_channel_recv_request_timeout(h_.get(), detail::millis(timeout), &p,
                                                            &n, &id)))
            return std::nullopt;
        return weft::request(h_.get(), p, n, id);
    }
    // Answers the request `id` later (nothing may be lent), waiting for room.
    void reply_to(std::uint64_t id, bytes_view data) {
        detail::check(weft_channel_reply_to(h_.get(), id, data.data(), data.size()));
    }
    // false when the channel is full.
    bool try_reply_to(std::uint64_t id, bytes_view data) {
        return detail::soft(weft_channel_try_reply_to(h_.get(), id, data.data(), data.size()));
    }
    // false when the channel stayed full for `timeout`.
    template <typename Rep, typename Period>
    bool reply_to_for(std::uint64_t id, bytes_view data,
                      std::chrono::duration<Rep, Period> timeout) {
        return detail::soft(weft_channel_reply_to_timeout(h_.get(), id, data.data(), data.size(),
                                                          detail::millis(timeout)));
    }
    std::size_t max_message_len() const {
        std::size_t n = 0;
        detail::check(weft_channel_max_message_len(h_.get(), &n));
        return n;
    }
    void close() noexcept { h_.reset(); }
    explicit operator bool() const noexcept { return bool(h_); }
    weft_channel_t *handle() const noexcept { return h_.get(); }

  private:
    friend class server;
    explicit channel(weft_channel_t *h) noexcept : h_(h) {}
    detail::owned<weft_channel_t, weft_channel_close> h_;
};

// A server handing one channel to each client.
class server {
  public:
    static server bind(const std::string &name, const weft_channel_options *opts = nullptr) {
        weft_server_t *h = nullptr;
        detail::check(weft_server_bind(detail::c_name(name), opts, &h));
        return server(h);
    }
    // The client side: a channel to the server `name`.
    template <typename Rep, typename Period>
    static weft::channel connect(const std::string &name,
                                 std::chrono::duration<Rep, Period> timeout,
                                 const weft_channel_options *opts = nullptr) {
        weft_channel_t *h = nullptr;
        detail::check(weft_server_connect(detail::c_name(name), detail::millis(timeout), opts, &h));
        return weft::channel(h);
    }
    weft::channel accept() {
        weft_channel_t *c = nullptr;
        detail::check(weft_server_accept(h_.get(), &c));
        return weft::channel(c);
    }
    std::optional<weft::channel> try_accept() {
        weft_channel_t *c = nullptr;
        if (!detail::soft(weft_server_try_accept(h_.get(), &c))) return std::nullopt;
        return weft::channel(c);
    }
    template <typename Rep, typename Period>
    std::optional<weft::channel> accept_for(std::chrono::duration<Rep, Period> timeout) {
        weft_channel_t *c = nullptr;
        if (!detail::soft(weft_server_accept_timeout(h_.get(), detail::millis(timeout), &c)))
            return std::nullopt;
        return weft::channel(c);
    }
    void close() noexcept { h_.reset(); }
    explicit operator bool() const noexcept { return bool(h_); }

  private:
    explicit server(weft_server_t *h) noexcept : h_(h) {}
    detail::owned<weft_server_t, weft_server_close> h_;
};

}  // namespace weft

#endif  // WEFT_HPP
