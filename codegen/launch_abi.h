// What a generated kernel tells a checker that runs its launches on the host (the CUDA
// driver double): where the pointers of a launch are. Plain C++ with no includes, because it
// is both a header (for the checker) and part of the host prelude's text (CMake appends it), so
// generated kernels can define their `<kernel>_launch_abi` with it. The header fields of the
// parameter block and of each entry are at the offsets of scheduler/kernel_abi.h.
#ifndef WIDEFUSE_LAUNCH_ABI
#define WIDEFUSE_LAUNCH_ABI

/// How much memory a pointer field reaches, so a checker can bound it.
enum wf_pointer_reach {
  wf_reach_one = 0,   // one element (a 0-d tensor read by every element)
  wf_reach_numel = 1, // numel contiguous elements of the member (flat bodies)
  wf_reach_first = 2  // at least the first element when numel > 0 (strided bodies)
};

/// One pointer field of a launch: in the parameter block (body -1) or in the member entries
/// run by body `body`, at a byte offset.
struct wf_pointer_field {
  int body;
  unsigned offset;
  const char* name;       // the field's name in the generated code
  unsigned element_bytes; // size of one element of the tensor
  int reach;              // a wf_pointer_reach
};

/// Where every pointer of a launch is; generated kernels export one as `<kernel>_launch_abi`.
struct wf_launch_abi {
  unsigned threads_per_block;   // the block size the kernel is written for
  unsigned parameter_bytes;     // size of the kernel's single argument
  unsigned table_offset;        // of the member table in the parameter block
  unsigned table_in_parameters; // 1: entries at table_offset; 0: at the header's table pointer
  unsigned entry_bytes;         // size of one member entry
  unsigned field_count;
  const wf_pointer_field* fields;
};

#endif // WIDEFUSE_LAUNCH_ABI
