// Dropout of flash_attention_score and its gradient: the keep bits of the probabilities P, from
// the user's drop_mask or drawn by a counter-based generator, and their application to a row.
//
// Element (b, n1, i, j) (sequence b, query head n1, query row i, key j of the sequence; S1/S2 the
// tiling's seq1/seq2) has the index e = ((b * N1 + n1) * S1 + i) * S2 + j. Its keep bit is
//   dropKind 1: bit j % 8 (little-endian in the byte, 1 = keep) of drop_mask byte
//               ((b * N1 + n1) * S1 + i) * (S2 / 8) + j / 8, MindSpore's [B, N1, S1, S2 / 8];
//   dropKind 2: draw e % 4 of Philox-4x32-10 (Salmon et al., SC'11) with counter
//               (e / 4 low, e / 4 high, offset low, offset high) and key (seed low, seed high),
//               seed and offset read from the int64 [2] input dropout_seed, kept when the draw is
//               below dropThreshold (keep_prob * 2^32).
// A kept element is scaled by dropScale (1 / keep_prob). The bits depend on the position only, so
// the gradient kernel regenerates the forward's bits tile by tile and no mask is ever stored.
// Scalar code builds the bits of [m rows x n keys] at a given (i, j) origin (any alignment), one
// 32-byte-aligned row of bits each; the vector unit applies them with Select.
#ifndef MS_OPS_FLASH_ATTENTION_DROPOUT_H_
#define MS_OPS_FLASH_ATTENTION_DROPOUT_H_

#include "flash_attention_kernel.h"

namespace ms_ops {
namespace kernel {

// The UB buffers and GM views dropout needs (dropKind > 0).
struct FaDropout {
  AscendC::TQue<AscendC::QuePosition::VECIN, 1> inQ;  // drop_mask bytes of a row segment
  AscendC::TBuf<AscendC::TPosition::VECCALC> bits;    // keep bits, `rows` rows `pitch` bytes apart
  AscendC::GlobalTensor<uint8_t> mask;
  uint32_t pitch = 0, key0 = 0, key1 = 0, ctr2 = 0, ctr3 = 0;
};

// Bytes of the bits of n keys starting anywhere in a byte (the copied-in drop_mask span).
__aicore__ inline uint32_t FaDropSpan(int64_t n) { return static_cast<uint32_t>((n + 7) / 8 + 1); }

__aicore__ inline void FaInitDropout(AscendC::TPipe &pipe, FaDropout &dr, GM_ADDR dropMask, GM_ADDR dropSeed,
                                     const FlashAttentionTilingData &td, uint32_t rows) {
  if (td.dropKind == 0) return;
  dr.pitch = UbBytes(FaDropSpan(td.nTile), 1);
  pipe.InitBuffer(dr.bits, rows * dr.pitch);
  if (td.dropKind == 1) {
    pipe.InitBuffer(dr.inQ, 1, dr.pitch);
    dr.mask.SetGlobalBuffer((__gm__ uint8_t *)dropMask, uint64_t(td.dropElems));
    return;
  }
  AscendC::GlobalTensor<int64_t> state;
  state.SetGlobalBuffer((__gm__ int64_t *)dropSeed, 2);
  const uint64_t seed = static_cast<uint64_t>(state.GetValue(0)), offset = static_cast<uint64_t>(state.GetValue(1));
  dr.key0 = static_cast<uint32_t>(seed);
  dr.key1 = static_cast<uint32_t>(seed >> 32);
  dr.ctr2 = static_cast<uint32_t>(offset);
  dr.ctr3 = static_cast<uint32_t>(offset >> 32);
}

// Philox-4x32-10 of counter c under key (k0, k1), in place.
__aicore__ inline void FaPhilox(uint32_t c[4], uint32_t k0, uint32_t k1) {
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = uint64_t(0xD2511F53u) * c[0], p1 = uint64_t(0xCD9E8D57u) * c[2];
    const uint32_t x0 = static_cast<uint32_t>(p1 >> 32) ^ c[1] ^ k0;
    const uint32_t x2 = static_cast<uint32_t>(p0 >> 32) ^ c[3] ^ k1;
    c[1] = static_cast<uint32_t>(p1);
    c[3] = static_cast<uint32_t>(p0);
    c[0] = x0;
    c[2] = x2;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
}

// Keep bits of rows [i0, i0 + m) x keys [j0, j0 + n) of (sg, n1) into row r of dr.bits, bit x of
// a row being key j0 + x.
__aicore__ inline void FaDropKeep(AscendC::TPipe &pipe, FaDropout &dr, const FlashAttentionTilingData &td,
                                  const FaSeg &sg, int64_t n1, int64_t i0, uint32_t m, int64_t j0, uint32_t n) {
  AscendC::LocalTensor<uint8_t> bits = dr.bits.Get<uint8_t>();
  // The previous Selects have read the bits this overwrites.
  OrderPipes<AscendC::HardEvent::V_S>(&pipe);
  for (uint32_t r = 0; r < m; ++r) {
    const uint64_t row = uint64_t((sg.b * td.heads1 + n1) * td.seq1 + i0 + r);
    const AscendC::LocalTensor<uint8_t> out = bits[r * dr.pitch];
    if (td.dropKind == 1) {
      const uint32_t shift = static_cast<uint32_t>(j0 % 8), bytes = static_cast<uint32_t>((shift + n + 7) / 8);
      AscendC::LocalTensor<uint8_t> in = dr.inQ.AllocTensor<uint8_t>();
      CopyIn(in, dr.mask[row * uint64_t(td.seq2 / 8) + uint64_t(j0 / 8)], bytes);
      dr.inQ.EnQue(in);
      in = dr.inQ.DeQue<uint8_t>();
      OrderPipes<AscendC::HardEvent::MTE2_S>(&pipe);
      for (uint32_t x = 0; x < (n + 7) / 8; ++x) {
        const uint32_t lo = in.GetValue(x), hi = x + 1 < bytes ? uint32_t(in.GetValue(x + 1)) : 0u;
        out.SetValue(x, static_cast<uint8_t>(((lo | (hi << 8)) >> shift) & 0xFFu));
      }
      dr.inQ.FreeTensor(in);
      continue;
    }
    uint32_t byte = 0, draw[4] = {0, 0, 0, 0};
    uint64_t block = ~uint64_t(0);
    for (uint32_t x = 0; x < n; ++x) {
      const uint64_t e = row * uint64_t(td.seq2) + uint64_t(j0 + x);
      if ((e >> 2) != block) {
        block = e >> 2;
        draw[0] = static_cast<uint32_t>(block);
        draw[1] = static_cast<uint32_t>(block >> 32);
        draw[2] = dr.ctr2;
        draw[3] = dr.ctr3;
        FaPhilox(draw, dr.key0, dr.key1);
      }
      if (uint64_t(draw[e & 3]) < td.dropThreshold) byte |= 1u << (x % 8);
      if (x % 8 == 7 || x + 1 == n) {
        out.SetValue(x / 8, static_cast<uint8_t>(byte));
        byte = 0;
      }
    }
  }
  OrderPipes<AscendC::HardEvent::S_V>(&pipe);
}

// dst = src * keep / keep_prob over `len` elements, with the bits of row r of the last FaDropKeep.
__aicore__ inline void FaDropApply(FaDropout &dr, const FlashAttentionTilingData &td,
                                   const AscendC::LocalTensor<float> &dst, const AscendC::LocalTensor<float> &src,
                                   uint32_t r, uint32_t len) {
  AscendC::Select(dst, dr.bits.Get<uint8_t>()[r * dr.pitch], src, 0.0f, AscendC::SELMODE::VSEL_TENSOR_SCALAR_MODE,
                  len);
  AscendC::Muls(dst, dst, td.dropScale, len);
}

}  // namespace kernel
}  // namespace ms_ops

#endif  // MS_OPS_FLASH_ATTENTION_DROPOUT_H_
