// The console's requests to its own server: JSON in and out, with the admin cookie the console's page set
// (same origin). A refusal rejects with the server's reason, which the console shows beside the field.

export class Refused extends Error {}

export async function call(method, url, body) {
  const headers = {"Accept": "application/json"};
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let response;
  try {
    response = await fetch(url, {method, headers, credentials: "same-origin", cache: "no-store",
                                 body: body === undefined ? undefined : JSON.stringify(body)});
  } catch (error) {
    throw new Refused(`the server could not be reached (${error.message}); try again`);
  }
  let data = null;
  try {
    data = await response.json();
  } catch (error) {
    data = null;   // an answer that is no JSON: a proxy's page, or a refused token's
  }
  if (response.status === 403) throw new Refused("the admin token was refused: open the console's link (with ?token=) again");
  if (!response.ok) throw new Refused((data && data.error) || `the server answered ${response.status}`);
  return data;
}

// A form's fields as an object of strings.
export function fields(form) {
  return Object.fromEntries(new FormData(form).entries());
}
