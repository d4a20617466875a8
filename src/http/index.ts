// Public exports of src/http (filled in by its issue).
export {}
