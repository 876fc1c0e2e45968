// The tiling-key declaration of twin_api0_cases.cpp's templated kernel, written as a CANN kernel's
// <op>_tiling_key.h: a dtype, a UINT tile count given as a range plus a single value, a bool.
#ifndef MS_OPS_TESTS_TWIN_API0_TILING_KEY_H_
#define MS_OPS_TESTS_TWIN_API0_TILING_KEY_H_

#include "ascendc/host_api/tiling/template_argument.h"

#define TPL_FLOAT 0
#define TPL_HALF 1

ASCENDC_TPL_ARGS_DECL(TwinTpl, ASCENDC_TPL_DTYPE_DECL(D_T, TPL_FLOAT, TPL_HALF),
                      ASCENDC_TPL_UINT_DECL(TILE_NUM, ASCENDC_TPL_4_BW, ASCENDC_TPL_UI_MIX, 1, 1, 3, 8),
                      ASCENDC_TPL_BOOL_DECL(IS_SPLIT, 0, 1));

ASCENDC_TPL_SEL(ASCENDC_TPL_ARGS_SEL(ASCENDC_TPL_KERNEL_TYPE_SEL(ASCENDC_TPL_AIV_ONLY),
                                     ASCENDC_TPL_DTYPE_SEL(D_T, TPL_FLOAT),
                                     ASCENDC_TPL_UINT_SEL(TILE_NUM, ASCENDC_TPL_UI_RANGE, 1, 1, 3),
                                     ASCENDC_TPL_BOOL_SEL(IS_SPLIT, 0, 1)),
                ASCENDC_TPL_ARGS_SEL(ASCENDC_TPL_DTYPE_SEL(D_T, TPL_HALF),
                                     ASCENDC_TPL_UINT_SEL(TILE_NUM, ASCENDC_TPL_UI_LIST, 2, 8),
                                     ASCENDC_TPL_BOOL_SEL(IS_SPLIT, 1)));

#endif  // MS_OPS_TESTS_TWIN_API0_TILING_KEY_H_
