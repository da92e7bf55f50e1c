#pragma once
/// The fixed part of the binary interface between generated kernels and whatever fills their
/// arguments (the runtime's binding, the CUDA driver double that checks launches): the header
/// of every parameter block and of every member-table entry. Codegen pins each field with a
/// WF_CHECK_OFFSET at these offsets, so the host compiler proves the layout the runtime
/// writes. Plain constants without dependencies, for any of those to include; nothing else
/// states these fields.

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
/// `i64 first_work`: the work of the members before it (a prefix sum of chunks x chunk_work).
inline constexpr unsigned kEntryFirstWorkOffset = 16;
/// `i64 chunk_work`: the work of one of its chunks, in elements (codegen/chunk_shares.h).
inline constexpr unsigned kEntryChunkWorkOffset = 24;
/// Size of a member-table entry's header; the body's fields follow.
inline constexpr unsigned kEntryHeaderBytes = 32;

/// One field of a fixed header as generated code declares it, so codegen writes the struct
/// and its offset pins from the same list the offsets above come from.
struct HeaderField {
  const char* type; ///< C++ type in the prelude's names; `{entry}` is the kernel's entry type
  const char* name;
  unsigned offset;
  const char* comment;
};

/// The parameter block's header, in order.
inline constexpr HeaderField kParameterHeader[] = {
    {"i32", "num_members", kNumMembersOffset, "members of this launch"},
    {"i32", "num_chunks", kNumChunksOffset, "chunks of all members"},
    {"u32*", "tickets", kTicketsOffset, "one per member, zero between launches (deferred writes)"},
    {"const {entry}*", "table", kTableOffset, "the member table when it lives in device memory"},
};

/// The header of every member-table entry (`wf_entry_header`), in order.
inline constexpr HeaderField kEntryHeader[] = {
    {"i64", "numel", kEntryNumelOffset, "elements of the member's domain"},
    {"i32", "first_chunk", kEntryFirstChunkOffset,
     "global index of the member's first chunk (prefix sum)"},
    {"i32", "body", kEntryBodyOffset, "which body runs the member (packed kernels)"},
    {"i64", "first_work", kEntryFirstWorkOffset,
     "work of the members before it: blocks share work, not chunk counts"},
    {"i64", "chunk_work", kEntryChunkWorkOffset, "elements of one of its chunks"},
};

} // namespace widefuse::abi
