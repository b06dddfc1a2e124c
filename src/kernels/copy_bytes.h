// Short copies with vector moves. glibc's memcpy takes `rep movsb` or a size dispatch for the
// 32-512 byte blocks that concatenates and fused tiles move row by row, and cost 2-4x a plain
// loop of 64-byte moves there (a concatenate of four (100, 32) float32 parts: 400 memcpys of 128
// bytes, 2.7-3.0 us).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__AVX512BW__)
#include <immintrin.h>
#endif

namespace lanes::kernels {

/// Copies `bytes` bytes from src to dst (not overlapping): 64-byte moves and one masked move for
/// the tail; memcpy beyond 4 KiB, where its wide paths win.
inline void copy_bytes(void* dst, const void* src, size_t bytes) {
#if defined(__AVX512BW__)
  if (bytes <= 4096) {
    char* out = static_cast<char*>(dst);
    const char* in = static_cast<const char*>(src);
    size_t i = 0;
    for (; i + 64 <= bytes; i += 64)
      _mm512_storeu_si512(static_cast<void*>(out + i),
                          _mm512_loadu_si512(static_cast<const void*>(in + i)));
    if (i < bytes) {
      const __mmask64 tail = (uint64_t{1} << (bytes - i)) - 1;
      _mm512_mask_storeu_epi8(out + i, tail, _mm512_maskz_loadu_epi8(tail, in + i));
    }
    return;
  }
#endif
  std::memcpy(dst, src, bytes);
}

}  // namespace lanes::kernels
