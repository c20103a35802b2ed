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
#define EW_POW 7  // acc ^ operand: integral exponents |n| <= 64 by repeated squaring, 0.5 as sqrt

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

// fill.comp (ConstantOfShape): FL_N elements of FL_ELEM_WORDS words at FL_DST, each the words
// FL_VALUE (int64: then its high word).
#define FL_N 0
#define FL_ELEM_WORDS 1
#define FL_DST 2
#define FL_VALUE 3
#define FL_WORDS 5

// pad.comp: out (contiguous, out dims) from in (contiguous, in dims), per dim the begin pad
// (negative crops); mode 0 constant (value bits), 1 reflect, 2 edge. Elements of PAD_EW words
// (int64: 2, the constant's high word PAD_VALUE_HI).
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
#define PAD_EW (PAD_BEGIN + PAD_MAX_RANK)
#define PAD_VALUE_HI (PAD_EW + 1)
#define PAD_WORDS (PAD_VALUE_HI + 1)

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

// Element types of the typed kernels (typed_ew, reduce, cumsum, scatter_nd), as specialization
// constants. On the device a bool is a 32-bit word holding 0 or 1; an int64 is two words, low first.
#define TY_F32 0
#define TY_I32 1
#define TY_I64 2
#define TY_BOOL 3
#define TY_NONE 4  // an omitted operand (Clip's bounds)

// typed_ew.comp: out = op(a[, b[, c]]) over any element types, operands broadcast through strides
// (offsets in words, strides in elements); integers computed in int64. Spec constants: 0 the op,
// 1..3 the operands' types, 4 the output's.
#define TE_CAST 1
#define TE_EQUAL 2
#define TE_LESS 3
#define TE_LESS_EQUAL 4
#define TE_GREATER 5
#define TE_GREATER_EQUAL 6
#define TE_AND 7
#define TE_OR 8
#define TE_XOR 9
#define TE_NOT 10
#define TE_WHERE 11  // a ? b : c, the words copied
#define TE_ADD 12
#define TE_SUB 13
#define TE_MUL 14
#define TE_DIV 15    // integers: truncates toward zero; division by zero gives 0 and is reported
#define TE_NEG 16
#define TE_ABS 17
#define TE_RELU 18
#define TE_CLIP 19   // integers: b (lower bound) then c (upper), each may be omitted (TY_NONE)
#define TE_MAX_RANK 6
#define TE_N 0
#define TE_RANK 1
#define TE_DIMS 2
#define TE_OUT (TE_DIMS + TE_MAX_RANK)
#define TE_IN (TE_OUT + 1)  // per operand: offset (words), TE_MAX_RANK strides (elements)
#define TE_IN_WORDS (1 + TE_MAX_RANK)
#define TE_ERR (TE_IN + 3 * TE_IN_WORDS)  // integer Div: the error word (first element dividing by 0)
#define TE_WORDS (TE_ERR + 1)

// reduce.comp: out[i] = op over the reduced positions, in index order, of the input at the kept
// coordinates of i (kept and reduced dims each with their input strides). Spec: 0 op, 1 type.
#define RD_SUM 1
#define RD_MEAN 2
#define RD_MAX 3
#define RD_MIN 4
#define RD_MAX_RANK 6
#define RD_N 0
#define RD_KRANK 1
#define RD_KDIMS 2
#define RD_KSTR (RD_KDIMS + RD_MAX_RANK)
#define RD_RRANK (RD_KSTR + RD_MAX_RANK)
#define RD_RDIMS (RD_RRANK + 1)
#define RD_RSTR (RD_RDIMS + RD_MAX_RANK)
#define RD_COUNT (RD_RSTR + RD_MAX_RANK)
#define RD_IN (RD_COUNT + 1)
#define RD_OUT (RD_IN + 1)
// Past RD_CHUNK reduced elements a reduction runs split (llvmpipe's loop limit): pass 1 (spec 2 =
// RD_PARTIAL) reduces each chunk of RD_CHUNK consecutive positions into 2 words of the workspace
// at RD_WS, pass 2 (RD_COMBINE) combines an output's RD_CHUNKS partials in order.
#define RD_CHUNK (RD_OUT + 1)
#define RD_CHUNKS (RD_CHUNK + 1)
#define RD_WS (RD_CHUNKS + 1)
#define RD_WORDS (RD_WS + 1)
#define RD_WHOLE 0
#define RD_PARTIAL 1
#define RD_COMBINE 2

// cumsum.comp: per lane (outer x inner) the running sum along `dim` elements `inner` apart.
// Spec: 0 type.
#define CS_LANES 0
#define CS_DIM 1
#define CS_INNER 2
#define CS_IN 3
#define CS_OUT 4
#define CS_EXCLUSIVE 5
#define CS_REVERSE 6
#define CS_WORDS 7

// Indexing kernels: indices are int32 (spec constant 0 = 1 word) or int64 (2 words); negative
// ones count from the end; out-of-range ones are clamped (never read outside the data) and the
// first bad element's position is atomicMin'ed into the node's error word (XX_ERR), which the
// executor reads back after the run and reports.
// gather.comp: out[o][j][r] = data[o][idx[j]][r] (o < outer, j < count, r < inner).
#define GA_N 0
#define GA_EW 1
#define GA_INNER 2
#define GA_COUNT 3
#define GA_AXIS_DIM 4
#define GA_DATA 5
#define GA_IDX 6
#define GA_OUT 7
#define GA_ERR 8
#define GA_WORDS 9
// gather_elements.comp: out[c] = data[c with c[axis] = idx[c]] over the indices' dims.
#define GE_MAX_RANK 6
#define GE_N 0
#define GE_RANK 1
#define GE_AXIS 2
#define GE_EW 3
#define GE_AXIS_DIM 4
#define GE_DATA 5
#define GE_IDX 6
#define GE_OUT 7
#define GE_IDIMS 8
#define GE_DSTR (GE_IDIMS + GE_MAX_RANK)
#define GE_ERR (GE_DSTR + GE_MAX_RANK)
#define GE_WORDS (GE_ERR + 1)
// gather_nd.comp: out[t][s] = data[batch(t)][idx[t][0..K)][s]; t < tuples (M per batch), s < slice.
#define GN_MAX_K 6
#define GN_N 0
#define GN_EW 1
#define GN_SLICE 2
#define GN_PER_BATCH 3
#define GN_K 4
#define GN_BATCH_STRIDE 5
#define GN_DATA 6
#define GN_IDX 7
#define GN_OUT 8
#define GN_KDIMS 9
#define GN_KSTR (GN_KDIMS + GN_MAX_K)
#define GN_ERR (GN_KSTR + GN_MAX_K)
#define GN_WORDS (GN_ERR + 1)
// scatter_nd.comp (after out = data): one invocation per slice element s walks the tuples t in
// order: out[idx[t]][s] = upd[t][s] (or reduced into it). Spec: 0 index words, 1 type, 2 reduction.
#define SN_NONE 0
#define SN_ADD 1
#define SN_MUL 2
#define SN_MAX 3
#define SN_MIN 4
#define SN_MAX_K 6
#define SN_SLICE 0
#define SN_TUPLES 1
#define SN_K 2
#define SN_EW 3
#define SN_IDX 4
#define SN_UPD 5
#define SN_OUT 6
#define SN_KDIMS 7
#define SN_KSTR (SN_KDIMS + SN_MAX_K)
#define SN_ERR (SN_KSTR + SN_MAX_K)
#define SN_WORDS (SN_ERR + 1)

// random.comp: one invocation per Philox block of 4 elements; the key (2 words) is staged by
// every run at RN_KEY; a, b are doubles (normal: mean, scale; uniform: low, high - low).
#define RN_COUNT 0
#define RN_NORMAL 1
#define RN_KEY 2
#define RN_A 3  // 2 words, low first
#define RN_B 5
#define RN_OUT 7
#define RN_WORDS 8

// canary_check.comp (safe mode): CK_RANGES guard ranges (word offset, word count) from CK_TABLE;
// the first broken one's index is atomicMin'ed into the arena word at CK_RESULT.
#define CK_CANARY 0xA5A5A5A5u
#define CK_RESULT 0
#define CK_RANGES 1
#define CK_TABLE 2

#endif
