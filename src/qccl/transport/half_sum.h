// Element-wise fp16 addition, acc[i] = fp16(float(acc[i]) + float(in[i]))
// rounded to nearest even: the f16 sum of every transport (MPI has no fp16
// type) and of the fp16 codec's hop reduce, so all round the same way. F16C
// converts 8 values per instruction where the CPU has it.
#pragma once

#include <cstddef>

namespace qccl {

void add_f16(_Float16* acc, const _Float16* in, std::size_t n);

}  // namespace qccl
