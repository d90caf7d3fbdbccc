// Elements built with user data as text only: `text` goes through textContent, string
// children become text nodes, attributes are set one by one. Nothing here parses HTML.

/**
 * An element with properties, attributes and children.
 * @param {string} tag
 * @param {{text?: string, className?: string, dataset?: Record<string, string>, [attribute: string]: unknown}} [props]
 * @param {(Node | string | null | undefined | false)[]} [children]
 */
export function el(tag, props = {}, children = []) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(props)) {
        if (value === undefined || value === null || value === false) continue;
        if (name === 'text') node.textContent = String(value);
        else if (name === 'className') node.className = String(value);
        else if (name === 'dataset') Object.assign(node.dataset, value);
        else node.setAttribute(name, value === true ? '' : String(value));
    }
    for (const child of children) if (child) node.append(child);
    return node;
}

/** @param {string} id */
export function byId(id) {
    const node = document.getElementById(id);
    if (!node) throw new Error(`no #${id} in the page`);
    return /** @type {any} */ (node);
}
