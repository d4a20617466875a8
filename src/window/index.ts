// Public exports of src/window (filled in by its issue).
export {}
