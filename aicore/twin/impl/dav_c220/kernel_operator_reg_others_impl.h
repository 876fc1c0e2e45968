// CANN's internal header of Atlas A2's special-register accessors (hardware intrinsics such as the
// AIPP and FFTS registers). CANN compiles its contents only for the device: in a CPU build
// (ASCENDC_CPU_DEBUG) it declares nothing, and so it is here. Kernels include it by this path.
#ifndef MS_OPS_TWIN_IMPL_DAV_C220_KERNEL_OPERATOR_REG_OTHERS_IMPL_H_
#define MS_OPS_TWIN_IMPL_DAV_C220_KERNEL_OPERATOR_REG_OTHERS_IMPL_H_
#endif  // MS_OPS_TWIN_IMPL_DAV_C220_KERNEL_OPERATOR_REG_OTHERS_IMPL_H_
