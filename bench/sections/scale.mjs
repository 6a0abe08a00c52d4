// placeholder, replaced below
export async function scale() {}
