#pragma once
/// The fixed part of the binary interface between generated kernels and whatever fills their
/// arguments (the runtime's binding, the CUDA driver double that checks launches): the header
/// of every parameter block and of every member-table entry. Codegen pins each field with a
/// WF_CHECK_OFFSET at these offsets, so the host compiler proves the layout the runtime
/// writes. Plain constants without dependencies, for any of those to include.

namespace widefuse::abi {

/// `i32 num_members`: the members of this launch.
inline constexpr unsigned kNumMembersOffset = 0;
/// `i32 num_chunks`: the chunks of all members.
inline constexpr unsigned kNumChunksOffset = 4;
/// `u32* tickets`: one zeroed counter per member (deferred writes).
inline constexpr unsigned kTicketsOffset = 8;
/// `const entry* table`: the member table when it lives in device memory, else null.
inline constexpr unsigned kTableOffset = 16;
/// Size of the parameter block's header; shared slots and an in-parameter table follow.
inline constexpr unsigned kParameterHeaderBytes = 24;

/// `i64 numel`: elements of the member's domain.
inline constexpr unsigned kEntryNumelOffset = 0;
/// `i32 first_chunk`: the member's first chunk (a prefix sum).
inline constexpr unsigned kEntryFirstChunkOffset = 8;
/// `i32 body`: which body of a packed kernel runs the member.
inline constexpr unsigned kEntryBodyOffset = 12;
/// Size of a member-table entry's header; the body's fields follow.
inline constexpr unsigned kEntryHeaderBytes = 16;

} // namespace widefuse::abi
