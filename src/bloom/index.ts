// Public exports of src/bloom (filled in by its issue).
export {}
