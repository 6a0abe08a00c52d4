// placeholder, replaced below
export async function cluster() {}
