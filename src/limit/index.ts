// Public exports of src/limit (filled in by its issue).
export {}
