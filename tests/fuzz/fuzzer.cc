#include "fuzzer.h"

#include <algorithm>
#include <typeinfo>

#include "qccl/common/errors.h"

namespace qccl::fuzz {
namespace {

constexpr std::string_view kStatePrefix = "state ";

std::string failure_file_hint(const std::filesystem::path& file) {
  return "; input written to " + file.string() + " (replay: qccl_fuzz --replay " +
         file.string() + ")";
}

}  // namespace

Fuzzer::Fuzzer(FuzzOptions options)
    : options_(std::move(options)), rng_(options_.seed),
      targets_(reduction_targets(options_.seed)), states_(state_targets(options_.seed)) {
  report_.targets = targets_.size();
  report_.state_targets = states_.size();
  if (!options_.corpus.empty()) {
    for (auto& entry : read_corpus(options_.corpus)) {
      corpus_[entry.target].push_back(std::move(entry));
    }
  }
}

// A call the contract allows to reject its input with a CommError or an
// InvalidArgument, and with nothing else.
template <class Call>
void Fuzzer::call(const std::string& what, Call&& body) {
  ++report_.calls;
  try {
    body();
  } catch (const Failure&) {
    throw;  // of a call inside this one
  } catch (const CommError&) {
    ++report_.rejected;
  } catch (const InvalidArgument&) {
    ++report_.rejected;
  } catch (const std::exception& e) {
    throw Failure{what + " threw " + typeid(e).name() + ": " + e.what()};
  } catch (...) {
    throw Failure{what + " threw something that is not a std::exception"};
  }
}

Bytes Fuzzer::encode(ReductionTarget& t, std::size_t first, std::size_t count) const {
  Bytes out(t.reduction->max_encoded_bytes(count));
  const auto in = std::span<const float>(t.input).subspan(first - t.encodable.first, count);
  out.resize(t.reduction->encode(in, first, out));
  return out;
}

// A chunk as a collective cuts one: starting at a multiple of the
// granularity, up to 64 units long, or to the end of what this rank encodes.
void Fuzzer::pick_chunk(const ReductionTarget& t, std::size_t& first, std::size_t& count) {
  const std::size_t g = t.granularity;
  const std::size_t units = (t.encodable.count + g - 1) / g;
  first = t.encodable.first + g * (rng_() % units);
  const std::size_t left = t.encodable.end() - first;
  count = std::min(left, g * (1 + rng_() % 64));
}

// Where a collective's buffers put a chunk: after other chunks (slots of
// max_encoded_bytes of their counts, the last of a segment shorter than the
// others), so at whatever alignment those leave; or at the start.
std::size_t Fuzzer::chunk_offset(const ReductionTarget& t) {
  if (rng_() % 2 == 0) return 0;
  return t.reduction->max_encoded_bytes(1 + rng_() % 64);
}

// `bytes` copied into a buffer that ends where they (or `capacity`) end,
// `offset` bytes in: what lies past them is out of bounds.
std::span<std::byte> Fuzzer::place(Bytes& buffer, const Bytes& bytes, std::size_t offset,
                                   std::size_t capacity) {
  buffer.assign(offset + std::max(capacity, bytes.size()), std::byte{0});
  std::copy(bytes.begin(), bytes.end(), buffer.begin() + static_cast<long>(offset));
  return std::span(buffer).subspan(offset);
}

void Fuzzer::exercise(ReductionTarget& t, std::size_t first, std::size_t count,
                      const Bytes& incoming_bytes, const std::string& mutation) {
  Encoding& r = *t.reduction;
  try {
    std::vector<float> out(count);
    Bytes in_buffer, accum_buffer;
    const auto incoming = place(in_buffer, incoming_bytes, chunk_offset(t), 0);
    call("decode", [&] { r.decode(incoming, first, out); });
    call("decode_contribution", [&] { r.decode_contribution(incoming, first, out); });
    std::vector<float> scratch(count);
    call("decode_add", [&] { r.decode_add(incoming, first, out, scratch); });
    Reduction* reducer = r.in_transit();
    if (reducer == nullptr) return;  // gathered, never combined in transit
    const Bytes valid = encode(t, first, count);
    const std::size_t capacity = r.max_encoded_bytes(count);
    const ReduceContext context{first, count, t.setup.rank,
                                static_cast<int>(rng_() % static_cast<unsigned>(t.setup.ranks))};
    // The incoming chunk into a valid accumulated one, then the result decoded.
    auto accum = place(accum_buffer, valid, chunk_offset(t), capacity);
    call("reduce (incoming)", [&] {
      const std::size_t size = reducer->reduce(incoming, accum, valid.size(), context);
      call("decode after reduce", [&] { r.decode(accum.first(size), first, out); });
    });
    // A valid incoming chunk into a mutated accumulated one.
    Bytes changed = valid, valid_buffer;
    const std::string accum_mutation = mutate_within(changed, capacity, rng_);
    const auto valid_in = place(valid_buffer, valid, chunk_offset(t), 0);
    accum = place(accum_buffer, changed, chunk_offset(t), capacity);
    call("reduce (into an accumulated chunk with " + accum_mutation + ")", [&] {
      const std::size_t size = reducer->reduce(valid_in, accum, changed.size(), context);
      call("decode after reduce", [&] { r.decode(accum.first(size), first, out); });
    });
  } catch (const Failure& f) {
    record(t.name, first, count, incoming_bytes, f.message + " [incoming: " + mutation + "]");
  }
}

void Fuzzer::exercise_state(const StateTarget& t, const Bytes& state,
                            const std::string& mutation) {
  try {
    auto codec = t.fresh();
    call("load_state", [&] {
      codec->load_state(state);
      call("save_state after load", [&] { codec->save_state(); });
    });
  } catch (const Failure& f) {
    record(std::string(kStatePrefix) + t.spec, 0, 0, state, f.message + " [" + mutation + "]");
  }
}

void Fuzzer::record(const std::string& target, std::size_t first, std::size_t count,
                    const Bytes& bytes, const std::string& message) {
  const std::string what = target + " elements " + std::to_string(first) + "+" +
                           std::to_string(count) + ": " + message;
  if (replaying_) throw Failure{what};
  const auto file = options_.failures / "qccl-fuzz-failure.chunk";
  write_entry(file, {target, first, count, bytes});
  throw Failure{what + failure_file_hint(file)};
}

void Fuzzer::iterate() {
  if (!states_.empty() && rng_() % 10 == 0) {
    const StateTarget& t = states_[rng_() % states_.size()];
    Bytes state = t.saved;
    const auto seeds = corpus_.find(std::string(kStatePrefix) + t.spec);
    if (seeds != corpus_.end() && rng_() % 4 == 0) {
      state = seeds->second[rng_() % seeds->second.size()].bytes;
    }
    const std::string mutation = mutate(state, rng_);
    exercise_state(t, state, mutation);
    return;
  }
  ReductionTarget& t = *targets_[rng_() % targets_.size()];
  std::size_t first = 0, count = 0;
  Bytes chunk;
  const auto seeds = corpus_.find(t.name);
  if (seeds != corpus_.end() && rng_() % 4 == 0) {
    const CorpusEntry& e = seeds->second[rng_() % seeds->second.size()];
    if (e.count > 0 && e.first >= t.encodable.first && e.first + e.count <= t.encodable.end()) {
      first = e.first;
      count = e.count;
      chunk = e.bytes;
    }
  }
  if (count == 0) {
    pick_chunk(t, first, count);
    chunk = encode(t, first, count);
  }
  const std::string mutation = mutate(chunk, rng_);
  exercise(t, first, count, chunk, mutation);
}

void Fuzzer::replay_entry(const CorpusEntry& e) {
  if (e.target.rfind(kStatePrefix, 0) == 0) {
    const std::string spec = e.target.substr(kStatePrefix.size());
    for (const StateTarget& t : states_) {
      if (t.spec == spec) exercise_state(t, e.bytes, "as recorded");
    }
    return;
  }
  for (auto& t : targets_) {
    if (t->name != e.target) continue;
    if (e.count == 0 || e.first < t->encodable.first || e.first + e.count > t->encodable.end()) {
      return;  // recorded for another layout of the target: nothing to replay
    }
    exercise(*t, e.first, e.count, e.bytes, "as recorded");
  }
}

FuzzReport Fuzzer::run() {
  const auto start = std::chrono::steady_clock::now();
  const auto out_of_time = [&] {
    if (options_.seconds <= 0) return false;
    const std::chrono::duration<double> spent = std::chrono::steady_clock::now() - start;
    return spent.count() >= options_.seconds;
  };
  try {
    for (const auto& [target, entries] : corpus_) {
      for (const CorpusEntry& e : entries) {
        replay_entry(e);
        ++report_.corpus_entries;
      }
    }
    while ((options_.iterations == 0 || report_.iterations < options_.iterations) &&
           (report_.iterations % 16 != 0 || !out_of_time())) {
      iterate();
      ++report_.iterations;
    }
  } catch (const Failure& f) {
    report_.failure = f.message;
  }
  return report_;
}

FuzzReport Fuzzer::replay(const CorpusEntry& entry) {
  replaying_ = true;
  try {
    replay_entry(entry);
  } catch (const Failure& f) {
    report_.failure = f.message;
  }
  return report_;
}

void Fuzzer::write_corpus(const std::filesystem::path& directory) const {
  for (const auto& t : targets_) {
    if (t->setup.ranks != 3 || t->setup.rank != 0) continue;
    const std::size_t g = t->granularity;
    const std::size_t count = std::min(t->encodable.count, std::max<std::size_t>(g, 32));
    const std::string op = directory_name(std::string(to_string(t->setup.operation)));
    write_entry(directory / t->codec_dir / (op + ".chunk"),
                {t->name, t->encodable.first, count, encode(*t, t->encodable.first, count)});
  }
  for (const StateTarget& t : states_) {
    write_entry(directory / t.codec_dir / "state.chunk",
                {std::string(kStatePrefix) + t.spec, 0, 0, t.saved});
  }
}

}  // namespace qccl::fuzz
