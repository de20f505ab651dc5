#include "qccl/codecs/registry/recommended_settings.h"

namespace qccl {

// Each row names where in its paper the setting stands. The five systems'
// papers: Global-QSGD (arXiv:2305.18627), IntSGD (arXiv:2102.08374), QSDP
// (arXiv:2302.02390), Q-GenX (arXiv:2308.09187), MergeComp
// (arXiv:2103.15195); the baselines' by authors and year.
std::vector<RecommendedSetting> recommended_settings() {
  return {
      {"fp32", "fp32", "the uncompressed baseline of every paper (MergeComp §5, Global-QSGD Table 4)", ""},
      {"fp16", "fp16", "MergeComp §5.1 and QSDP §6.1's baseline gradients", "refuses means beyond 65504"},
      {"global-qsgd", "global-qsgd:bits=8",
       "Global-QSGD §8: the default, inf-norm and 8 bits (§4.2: 8-bit as the default bit-width)", ""},
      {"global-qsgd", "global-qsgd:bits=8,dither=exp",
       "Global-QSGD §9, Tables 4-5 (E 8-bit): slightly slower, better convergence", ""},
      {"global-qsgd", "global-qsgd:bits=4", "Global-QSGD §9, Tables 4-5 (L 4-bit)",
       "averages at every hop, so its error grows with the ranks"},
      {"qsgd", "qsgd:bits=8,norm=inf",
       "QSGD (Alistarh et al. 2017) with max-norm scaling; MergeComp §5 runs 8 bits",
       "the default norm=2 is the analysed variant"},
      {"qgenx", "qgenx:bits=8", "Q-GenX §5 (UQ8: 8 bits, buckets of 1024)", ""},
      {"qgenx", "qgenx:bits=4", "Q-GenX §5 (UQ4: 4 bits, buckets of 1024)", ""},
      {"minmax", "minmax:bits=8,bucket=1024",
       "QSDP §6.1: W8G8's gradients, buckets of 1024 (§5.1)",
       "weights: --weights-codec minmax:bits=8,rounding=shift"},
      {"minmax", "minmax:bits=4,levels=learned",
       "QSDP §6.1: learned levels help at 6 bits and fewer", "gradients only"},
      {"terngrad", "terngrad:clip=2.5",
       "TernGrad (Wen et al. 2017): gradients clipped at 2.5 standard deviations", "biased once clipped"},
      {"natural", "natural", "natural compression (Horvath et al. 2019); IntSGD Table 2's Nat SGD", ""},
      {"intsgd", "intsgd",
       "IntSGD Algorithm 1 and App. C.4: random rounding, beta = 0.9, eps = 1e-8",
       "needs the optimizer's step feedback; over 127 ranks wire=int32"},
      {"intsgd-heuristic", "intsgd-heuristic:wire=int32",
       "IntSGD §5.2: the heuristic (SwitchML) scaling on int8 or int32",
       "a baseline: no convergence guarantee, even with int32"},
      {"intdiana", "intdiana:wire=int64,beta=0,eps=0",
       "IntSGD Algorithm 3 (IntDIANA): no moving average, no eps",
       "needs step feedback; allreduce only"},
      {"topk", "topk:ratio=0.01", "MergeComp §5: 99% sparsity; Stich et al. 2018: with memory (ef=on)", ""},
      {"randk", "randk:ratio=0.01", "Rand-k with memory, unscaled (Stich et al. 2018); MergeComp §5: 99%",
       "the step shrinks by k/d: try --momentum 0"},
      {"dgc", "dgc:ratio=0.001",
       "DGC (Lin et al. 2018): 99.9% sparsity, momentum correction 0.9, sampled threshold",
       "the paper also warms up over 4 epochs (warmup=STEPS) and clips (clip=C); run the "
       "optimizer without momentum"},
      {"dgc", "dgc:ratio=0.01", "MergeComp §5: DGC at 99% sparsity", "run the optimizer without momentum"},
      {"signsgd", "signsgd", "signSGD with majority vote (Bernstein et al. 2018)",
       "a +-1 direction: lr 1e-4..1e-3, no momentum"},
      {"signum", "signum:momentum=0.9", "SigNUM (Bernstein et al. 2018): momentum 0.9",
       "run the optimizer without momentum; lr 1e-4..1e-3"},
      {"scaled-sign", "scaled-sign",
       "no paper recommends it alone: Karimireddy et al. 2019 add error feedback (ef-signsgd)", ""},
      {"ef-signsgd", "ef-signsgd", "EF-SignSGD (Karimireddy et al. 2019); a MergeComp baseline", ""},
      {"onebit-quantizer", "onebit-quantizer",
       "no paper recommends it alone: 1-bit SGD (Seide et al. 2014) keeps the error (onebit)", ""},
      {"onebit", "onebit", "1-bit SGD (Seide et al. 2014): two means, error feedback", ""},
      {"powersgd", "powersgd:rank=2",
       "PowerSGD (Vogels et al. 2019): rank 2 for CNNs, rank 4 for LSTMs (IntSGD App. C.1)",
       "warm start and error feedback on"},
      {"powersgd", "powersgd:rank=32", "Global-QSGD Table 4's PowerSGD baseline (rank 32)", ""},
      {"ef", "ef(scaled-sign)",
       "error feedback for biased codecs (Karimireddy et al. 2019): ef(scaled-sign) is ef-signsgd",
       "wraps allreduce and reduce-scatter means"},
  };
}

}  // namespace qccl
