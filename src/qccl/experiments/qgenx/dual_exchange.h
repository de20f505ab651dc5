// The exchanges a distributed VI solver makes on every rank, shared by
// Q-GenX (Algorithm 1) and quantized SGDA (Q-GenX Appendix H.1):
// - the quantized mean (1/K)Σ_k Q(v_k) of the ranks' dual vectors, with
//   this rank's own Q(v_k), through a codec's allreduce_mean on fp32
//   copies of the fp64 vectors (every rank gets the same bits);
// - an exact sum over ranks of one double per rank (an adaptive step
//   size's Σ_k term), identical on every rank;
// - a replica check: every rank's checksum of the shared state compared
//   with rank 0's.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "qccl/codecs/codec.h"
#include "qccl/collectives/communicator.h"
#include "qccl/collectives/options.h"

namespace qccl::vi {

// What one codec call put on the wire, if the codec can tell (a hook, so
// this layer needs no codec's concrete type): this rank's encoded bits and
// a bound on them (NaN when the codec has none).
struct EncodedBits {
  double bits = 0;
  double bound = 0;
};
using EncodedBitsHook = std::function<EncodedBits(const Codec& codec, std::size_t count)>;

// One step's exchanges as this rank saw them (added to by DualExchange).
struct ExchangeCounts {
  std::uint64_t vector_exchanges = 0;  // codec calls
  double encoded_bits = 0;             // this rank's encodings, summed over the calls
  double bound_bits = 0;               // their bounds, summed (NaN if unknown)
};

class DualExchange {
 public:
  // comm and codec must outlive it. Default hook: codec.wire_bytes(d)·8
  // bits, no bound.
  DualExchange(Communicator& comm, Codec& codec, CollectiveOptions collective,
               EncodedBitsHook encoded_bits, std::size_t dimension);

  // mean = (1/K)Σ_k Q(v_k), own = this rank's Q(v) (fp64 copies of the
  // codec's fp32 results). Collective.
  void mean(std::span<const double> v, std::span<double> mean, std::span<double> own,
            ExchangeCounts& counts);

  // Σ_k of every rank's `local`, summed in rank order from exact copies,
  // so the same bits on every rank. `operation` names the call check;
  // a non-finite value on any rank raises NonFiniteError on every rank
  // with nonfinite_message(the ranks).
  double sum_over_ranks(double local, std::string_view operation, std::uint64_t iteration,
                        const std::function<std::string(const std::string& ranks)>& nonfinite_message);

  // Collective: MismatchError on every rank, "`where`: the iterates of
  // rank(s) … differ from rank 0's …", unless every rank's checksum is
  // rank 0's.
  void check_replicas(std::uint64_t checksum, std::string_view operation, std::uint64_t iteration,
                      const std::string& where);

  Communicator& comm() { return comm_; }
  Codec& codec() { return codec_; }

 private:
  Communicator& comm_;
  Codec& codec_;
  CollectiveOptions collective_;
  EncodedBitsHook encoded_bits_;
  std::size_t d_;
  std::vector<float> wire_, wire_own_;
};

}  // namespace qccl::vi
