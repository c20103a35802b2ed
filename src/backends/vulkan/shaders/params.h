// The parameter layouts of every shader (uint words from a dispatch's base) and the element-wise
// step codes, read by the C++ families and the shaders alike: plain #defines, valid C++ and GLSL.
#ifndef LOCKSTEP_VULKAN_PARAMS_H
#define LOCKSTEP_VULKAN_PARAMS_H

#define EW_ADD 1
#define EW_SUB 2
#define EW_MUL 3
#define EW_DIV 4
#define EW_CLIP_LO 5  // acc < operand ? operand : acc (NaN stays NaN)
#define EW_CLIP_HI 6  // acc > operand ? operand : acc
#define EW_TANH 10
#define EW_SIGMOID 11
#define EW_RELU 12
#define EW_LEAKY_RELU 13
#define EW_EXP 14
#define EW_NEG 15
#define EW_SQRT 16
#define EW_IDENTITY 17
#define EW_ABS 18
#define EW_RECIPROCAL 19
#define EW_FLOOR 20
#define EW_CEIL 21
#define EW_ERF 22
#define EW_SOFTPLUS 23

// Layout of an element-wise program in the params buffer (uint words from its base).
#define EW_MAX_RANK 6
#define EW_MAX_STEPS 8
#define EW_N 0                            // elements of the output
#define EW_RANK 1
#define EW_DIMS 2                         // EW_MAX_RANK dims, outermost first (unused: 1)
#define EW_OUT (EW_DIMS + EW_MAX_RANK)    // output offset (floats)
#define EW_SRC (EW_OUT + 1)               // source offset, then EW_MAX_RANK strides
#define EW_NSTEPS (EW_SRC + 1 + EW_MAX_RANK)
#define EW_STEPS (EW_NSTEPS + 1)
// Per step: (unused), (unused), alpha (float bits), operand offset, EW_MAX_RANK operand strides;
// the step itself is specialization constant k: code | EW_HAS_OPERAND | EW_OPERAND_LHS (0: none).
#define EW_HAS_OPERAND 0x100u
#define EW_OPERAND_LHS 0x200u
#define EW_STEP_WORDS (4 + EW_MAX_RANK)
#define EW_WORDS (EW_STEPS + EW_MAX_STEPS * EW_STEP_WORDS)

// copy.comp: dst[dst_at + sum c_d dst_stride_d] = src[src_at + sum c_d src_stride_d] over `dims`,
// in units of `elem_words` 32-bit words (1: float32/int32, 2: int64); strides may be negative.
#define CP_MAX_RANK 6
#define CP_N 0
#define CP_RANK 1
#define CP_ELEM_WORDS 2
#define CP_DIMS 3
#define CP_SRC (CP_DIMS + CP_MAX_RANK)  // src offset (words), then CP_MAX_RANK strides (elements)
#define CP_DST (CP_SRC + 1 + CP_MAX_RANK)
#define CP_WORDS (CP_DST + 1 + CP_MAX_RANK)

// pad.comp: out (contiguous, out dims) from in (contiguous, in dims), per dim the begin pad
// (negative crops); mode 0 constant (value bits), 1 reflect, 2 edge. 32-bit elements.
#define PAD_MAX_RANK 6
#define PAD_N 0
#define PAD_RANK 1
#define PAD_MODE 2
#define PAD_VALUE 3
#define PAD_SRC 4
#define PAD_DST 5
#define PAD_OUT_DIMS 6
#define PAD_IN_DIMS (PAD_OUT_DIMS + PAD_MAX_RANK)
#define PAD_BEGIN (PAD_IN_DIMS + PAD_MAX_RANK)
#define PAD_WORDS (PAD_BEGIN + PAD_MAX_RANK)

// conv.comp / conv_transpose.comp: 2-D geometry (a 1-D conv has H = KH = 1); offsets in floats,
// CV_BIAS = 0xffffffff for none. Conv weights [Cout][Cin/g][KH][KW]; ConvTranspose weights
// [Cin][Cout/g][KH][KW].
#define CV_N 0
#define CV_CIN 1
#define CV_HIN 2
#define CV_WIN 3
#define CV_COUT 4
#define CV_HOUT 5
#define CV_WOUT 6
#define CV_KH 7
#define CV_KW 8
#define CV_SH 9
#define CV_SW 10
#define CV_DH 11
#define CV_DW 12
#define CV_PH 13
#define CV_PW 14
#define CV_GROUP 15
#define CV_X 16
#define CV_W 17
#define CV_BIAS 18
#define CV_Y 19
#define CV_XTILES 20  // invocations along W (conv: ceil(W_out / POS_TILE); transpose: phases x ceil(Q / 4))
#define CV_KSTEP_H 21  // transpose: sh / gcd(sh, dh), the distance of the taps one output phase reads
#define CV_KSTEP_W 22  // transpose: sw / gcd(sw, dw)
#define CV_WORDS 23
#define CV_NO_BIAS 0xffffffffu

// matmul.comp: Y[b][m][n] = alpha * sum_k A[b][m][k] B[b][k][n] (k in order from zero)
// + beta * C[m][n]; A and B through strides (transposes, broadcast batch dims: stride 0).
#define MM_MAX_BATCH_RANK 4
#define MM_M 0
#define MM_N 1
#define MM_K 2
#define MM_BRANK 3
#define MM_BDIMS 4                                 // MM_MAX_BATCH_RANK batch dims, outermost first
#define MM_ABSTR (MM_BDIMS + MM_MAX_BATCH_RANK)    // A's batch strides (elements)
#define MM_BBSTR (MM_ABSTR + MM_MAX_BATCH_RANK)    // B's batch strides
#define MM_A (MM_BBSTR + MM_MAX_BATCH_RANK)        // then A's m stride, k stride
#define MM_B (MM_A + 3)                            // then B's k stride, n stride
#define MM_C (MM_B + 3)                            // CV_NO_BIAS for none; then C's m stride, n stride
#define MM_Y (MM_C + 3)
#define MM_ALPHA (MM_Y + 1)
#define MM_BETA (MM_ALPHA + 1)
#define MM_WORDS (MM_BETA + 1)

// softmax.comp: for each (outer, inner): y = e^(x - max) / sum e^(x - max) along `dim` elements
// `inner` apart (max, then the sum in order).
#define SM_ROWS 0  // outer x inner
#define SM_DIM 1
#define SM_INNER 2
#define SM_X 3
#define SM_Y 4
#define SM_WORDS 5

// canary_check.comp (safe mode): CK_RANGES guard ranges (word offset, word count) from CK_TABLE;
// the first broken one's index is atomicMin'ed into the arena word at CK_RESULT.
#define CK_CANARY 0xA5A5A5A5u
#define CK_RESULT 0
#define CK_RANGES 1
#define CK_TABLE 2

#endif
